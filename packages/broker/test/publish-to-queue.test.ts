import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { amqpUrl, deleteAmqpObjects, onAmqpChannel, randomAmqpPrefix } from '@trips/testkit';
import { BrokerUnreachable, publishToQueue, QueueMissing, type OutgoingMessage } from '../src/index.ts';

// The short-lived publish of the settings module (an owner's test event or redelivery), against the
// real broker, a node that refuses connections, and one that accepts and then says nothing.
const queue = `${randomAmqpPrefix()}short-lived`;

beforeAll(() => onAmqpChannel((ch) => ch.assertQueue(queue, { durable: true }).then(() => undefined)));
afterAll(() => deleteAmqpObjects({ queues: [queue] }));

async function* batches(...sizes: number[]): AsyncIterable<OutgoingMessage[]> {
  let n = 0;
  for (const size of sizes)
    yield Array.from({ length: size }, () => ({ content: Buffer.from(String(++n)), properties: {} }));
}

test('each batch is confirmed in turn, persistent, and nothing is left open', async () => {
  const counts: number[] = [];
  const sent = await publishToQueue([amqpUrl], queue, batches(2, 3), {
    onConfirmed: (n) => void counts.push(n),
  });
  expect(sent).toBe(5);
  expect(counts).toEqual([2, 5]);
  const received = await onAmqpChannel(async (ch) => {
    const seen: { body: string; persistent: boolean }[] = [];
    for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true }))
      seen.push({ body: m.content.toString(), persistent: m.properties.deliveryMode === 2 });
    return seen;
  });
  expect(received).toEqual(['1', '2', '3', '4', '5'].map((body) => ({ body, persistent: true })));
});

test('a missing queue, a broker out of reach and one that never answers: each its error, in time', async () => {
  await expect(publishToQueue([amqpUrl], `${queue}.missing`, batches(1))).rejects.toThrow(QueueMissing);

  const refusing = createServer().listen(0, '127.0.0.1');
  await once(refusing, 'listening');
  const { port: closedPort } = refusing.address() as { port: number };
  await new Promise((resolve) => refusing.close(resolve));
  await expect(publishToQueue([`amqp://127.0.0.1:${closedPort}`], queue, batches(1))).rejects.toThrow(
    BrokerUnreachable,
  );

  // Takes the connection and says nothing, as RabbitMQ blocked by an alarm says nothing to a publisher.
  const sockets: Socket[] = [];
  const mute = createServer((socket) => sockets.push(socket)).listen(0, '127.0.0.1');
  await once(mute, 'listening');
  const { port } = mute.address() as { port: number };
  try {
    const started = Date.now();
    const error = await publishToQueue([`amqp://127.0.0.1:${port}`], queue, batches(1), {
      timeoutMs: 500,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrokerUnreachable);
    expect(Date.now() - started).toBeLessThan(2_000);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => mute.close(resolve));
  }
});
