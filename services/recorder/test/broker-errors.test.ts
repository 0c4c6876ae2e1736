import { fileURLToPath } from 'node:url';
import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  onAmqpChannel,
  randomAmqpPrefix,
  startServiceProcess,
  waitFor,
  waitForChannelRefusals,
  type ServiceProcess,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { hostWrite } from './helpers.ts';

// RabbitMQ refuses the recorder's declaration of its exchange (406: it exists with another type)
// and closes the publishing channel while the connection stays up. The recorder logs it, stays
// up, and publishes once the exchange is fixed.

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
let t: TestDatabase;
let prefix: string;
let queue: TestQueue | undefined;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
});
afterAll(async () => {
  service?.child.kill('SIGKILL');
  await queue?.close();
  await deleteAmqpObjects({ exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`] });
  await t.drop();
});

test('an exchange of another type: the recorder logs the refusal, stays up, and publishes once it is fixed', async () => {
  const exchange = `${prefix}trips.events`;
  await onAmqpChannel((ch) => ch.assertExchange(exchange, 'fanout', { durable: true }));

  const running = startServiceProcess(main, {
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    RECORDER_HEALTH_PORT: '0',
    RECORDER_POLL_INTERVAL: '20ms',
    LOG_LEVEL: 'info',
  });
  service = running;

  // Refused, and refused again on a new channel after a pause.
  await waitForChannelRefusals(running, 2);
  expect({ exitCode: running.exitCode, output: running.output }).toEqual({
    exitCode: undefined,
    output: expect.any(String),
  });
  expect(running.output).toContain("PRECONDITION_FAILED - inequivalent arg 'type'");
  expect(running.output).toContain('RabbitMQ closed the channel');
  expect(running.output).not.toContain('    at '); // a log line with the message, never a stack trace

  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_B', 'Broker errors')`);
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_b1', 'agy_B', 'T', 3)`,
  );
  await onAmqpChannel((ch) => ch.deleteExchange(exchange));
  // Declares the topic exchange too, with a queue bound to it (and to the express exchange: agy_B
  // is quiet), so the recorder's publish is routed.
  queue = await collectEvents(prefix);
  await waitFor(
    () => running.exitCode !== undefined || queue!.messages.some((m) => m.type === 'trip.created'),
    {
      timeoutMs: 20_000,
      what: 'the event published once the exchange was fixed',
    },
  );
  expect(running.exitCode).toBeUndefined();
}, 60_000);
