import { once } from 'node:events';
import { createServer } from 'node:net';
import { ConfigError, EnvReader } from '@trips/runtime';
import { amqpUrl, LogCapture, waitFor } from '@trips/testkit';
import { brokerAddress, connectToFirst, readAmqpUrls } from '../src/index.ts';
import { connectBroker } from '../src/client/connect.ts';

const read = (value: string | undefined) => {
  const env = new EnvReader({ AMQP_URL: value });
  const urls = readAmqpUrls(env);
  env.done();
  return urls;
};

/** A port nothing listens on: a node that is down. */
async function deadUrl(): Promise<string> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `amqp://guest:guest@127.0.0.1:${port}`;
}

describe('AMQP_URL', () => {
  test('one URL, or a comma-separated list of the nodes of a cluster', () => {
    expect(read(undefined)).toEqual(['amqp://guest:guest@localhost:5672']);
    expect(read(' amqps://u:p@rabbit-0:5671 , amqps://u:p@rabbit-1:5671,amqps://u:p@rabbit-2:5671 ')).toEqual(
      ['amqps://u:p@rabbit-0:5671', 'amqps://u:p@rabbit-1:5671', 'amqps://u:p@rabbit-2:5671'],
    );
  });

  test.each([
    ['amqp://u:secret@a,,amqp://u:secret@b', "AMQP_URL's URL 2 of 3 is empty"],
    ['amqp://u:secret@a,', "AMQP_URL's URL 2 of 2 is empty"],
    ['amqp://u:secret@a,https://u:secret@b', "AMQP_URL's URL 2 of 2 must use amqp: or amqps: (got https:)"],
    ['u:secret@a', 'AMQP_URL must use amqp: or amqps: (got u:)'],
    ['amqp://u:secret@a,not a url', "AMQP_URL's URL 2 of 2 is not a URL"],
    ['amqp://u:secret@a,amqp://u:secret@a', 'AMQP_URL names the same URL twice'],
  ])('%s is refused at start, naming the position, never the password', (value, problem) => {
    const error = (() => {
      try {
        read(value);
      } catch (thrown) {
        return thrown as ConfigError;
      }
      throw new Error('accepted');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]!.startsWith(problem)).toBe(true);
    expect(error.message).not.toContain('secret');
  });
});

describe('connecting to a list of nodes', () => {
  test('a short-lived connection goes to the first node that answers', async () => {
    const connection = await connectToFirst([await deadUrl(), amqpUrl], { timeout: 5_000 });
    await connection.close();
  });

  test('when none answers, the error names each node without its credentials', async () => {
    const [a, b] = [await deadUrl(), await deadUrl()];
    const error = await connectToFirst([a, b], { timeout: 5_000 }).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^127\.0\.0\.1:\d+: .*ECONNREFUSED.*; 127\.0\.0\.1:\d+: .*ECONNREFUSED/,
    );
    expect((error as Error).message).not.toContain('guest');
  });

  test("a service's connection moves on to the next node within about a second of one refusing", async () => {
    const logs = new LogCapture('broker');
    const connection = connectBroker([await deadUrl(), await deadUrl(), amqpUrl], logs.logger);
    try {
      const started = Date.now();
      await waitFor(() => connection.isConnected(), {
        timeoutMs: 5_000,
        what: 'a connection to the live node',
      });
      // At worst two refusals first, each followed by the one-second pause.
      expect(Date.now() - started).toBeLessThan(3_500);
      const line = logs.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'connected to RabbitMQ');
      expect(line?.broker).toBe(brokerAddress(amqpUrl));
      expect(logs.text()).not.toContain('guest:guest');
    } finally {
      await connection.close();
    }
  });
});
