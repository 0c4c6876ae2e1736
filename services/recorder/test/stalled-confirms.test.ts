import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import { UnconfirmedPublish } from '@trips/broker';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  onAmqpChannel,
  randomAmqpPrefix,
  stallFirstChannel,
  waitFor,
  type TestDatabase,
} from '@trips/testkit';
import { Publisher } from '../src/publisher.ts';
import { drain, handRecorder, hostWrite } from './helpers.ts';

// A channel that stops confirming while its connection lives: on RabbitMQ 3.10 a quorum queue's
// client on the broker's side of a channel can go on sending a channel's publishes to a leader that
// is gone (docs/operations.md, "Supported RabbitMQ versions"). That cannot be caused at will, so
// the test makes the same state from the client's side: the first channel's confirms are swallowed.
// What this proves: the publisher replaces such a channel after one timeout and publishes the event
// on the next, with its id. What it cannot: that RabbitMQ strands a channel's publishes.
const TIMEOUT_MS = 300;

let t: TestDatabase;
let connection: AmqpConnectionManager;
/** How many channels the publisher has opened; the first one's confirms never reach it. */
let channels: () => number;
const prefix = randomAmqpPrefix();
const exchange = `${prefix}trips.events`;
const expressExchange = `${exchange}.express`;
const queue = `${prefix}stalled`;

beforeAll(async () => {
  t = await createTestDatabase();
  await onAmqpChannel(async (ch) => {
    await ch.assertQueue(queue, { durable: true });
    for (const x of [exchange, expressExchange]) {
      await ch.assertExchange(x, 'topic', { durable: true });
      await ch.bindQueue(queue, x, '#');
    }
  });
  connection = amqp.connect([amqpUrl]);
  channels = stallFirstChannel(connection);
});
afterAll(async () => {
  await connection.close();
  await deleteAmqpObjects({ queues: [queue], exchanges: [exchange, expressExchange] });
  await t.drop();
});

test('a channel that confirms nothing in time is replaced, and the event goes out on the next one', async () => {
  await hostWrite(
    t.db,
    `INSERT INTO agencies (id, name) VALUES ('agy_S', 'Stalled');
     INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_s1', 'agy_S', 'T', 3)`,
  );
  await drain(handRecorder(t.db));
  const [event] = await t.db.selectFrom('events_unpublished').select('id').execute();
  const logs = new LogCapture('recorder');
  const publisher = new Publisher(
    t.db,
    connection,
    { exchange, expressExchange, batchSize: 100, publishTimeoutMs: TIMEOUT_MS },
    logs.logger,
  );
  try {
    await expect(publisher.runBatch()).rejects.toThrow(UnconfirmedPublish);
    await waitFor(async () => (await publisher.runBatch().catch(() => 0)) === 1, {
      timeoutMs: 10_000,
      what: 'the event published on a new channel',
    });
  } finally {
    await publisher.close();
  }
  expect(channels()).toBe(2);
  expect(await t.db.selectFrom('events_unpublished').select('id').execute()).toEqual([]);
  // Sent on both channels (the first one's confirm was swallowed, not its publish): the same id.
  const ids = await onAmqpChannel(async (ch) => {
    const seen: string[] = [];
    for (let m = await ch.get(queue); m; m = await ch.get(queue)) {
      seen.push(m.properties.messageId as string);
      ch.ack(m);
    }
    return seen;
  });
  expect(ids).toEqual([event!.id, event!.id]);
  expect(logs.lines.filter((l) => l.includes('a publish went unconfirmed past its timeout'))).toHaveLength(1);
}, 30_000);
