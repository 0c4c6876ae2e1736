// How many round trips to Postgres a batch costs (issue 30): on a busy machine they were most of
// what recording and publishing cost, in the recorder and in its Postgres backends. A recorder
// batch is two scripts (open + lock + read the outbox's head; write everything + commit), after an
// idle batch one EXISTS before them; a publisher batch is two (open + lock + read the head;
// forget what was confirmed + commit), plus the EXISTS unless told events were just recorded.
// However many changes the batch holds. A regression that adds a statement fails here.
import { sql, type Kysely } from 'kysely';
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import { createDb, type Database } from '@trips/db';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  onAmqpChannel,
  randomAmqpPrefix,
  type TestDatabase,
} from '@trips/testkit';
import { Publisher } from '../src/publisher.ts';
import { drain, handRecorder, hostWrite } from './helpers.ts';

let t: TestDatabase;
let connection: AmqpConnectionManager;
const prefix = randomAmqpPrefix();
const exchange = `${prefix}trips.events`;
const express = `${exchange}.express`;
const queue = `${prefix}round-trips`;

/** The texts sent to Postgres since the last reset, one per round trip (kysely's query log). */
let sent: string[] = [];
let db: Kysely<Database>;

beforeAll(async () => {
  t = await createTestDatabase();
  db = createDb(t.url, { max: 2, onStatement: (text) => sent.push(text) });
  connection = amqp.connect([amqpUrl]);
  await onAmqpChannel(async (ch) => {
    for (const name of [exchange, express]) await ch.assertExchange(name, 'topic', { durable: true });
    await ch.assertQueue(queue, { durable: true });
    for (const name of [exchange, express]) await ch.bindQueue(queue, name, '#');
  });
});
afterAll(async () => {
  await connection.close();
  await db.destroy();
  await deleteAmqpObjects({ queues: [queue], exchanges: [exchange, express] });
  await t.drop();
});

async function createTrips(count: number): Promise<void> {
  await hostWrite(
    t.db,
    `INSERT INTO agencies (id, name) VALUES ('agy_rt', 'RT') ON CONFLICT DO NOTHING;
     INSERT INTO trips (agency_id, title, num_days) SELECT 'agy_rt', 'T' || i, 3 FROM generate_series(1, ${count}) i`,
  );
}

test.each([1, 40])(
  'a recorder batch of %i changes is three round trips after an idle one, two after a busy one',
  async (count) => {
    const recorder = handRecorder(db, { batchSize: 100 });
    await createTrips(1);
    await drain(recorder); // creates the partitions, and ends idle
    await createTrips(count);
    sent = [];
    const first = await recorder.runBatch();
    expect(first.changes).toBe(count);
    expect(first.events).toHaveLength(count);
    expect(sent).toHaveLength(3); // EXISTS; BEGIN + lock + head; writes + COMMIT

    await createTrips(count);
    sent = [];
    const second = await recorder.runBatch();
    expect(second.events).toHaveLength(count);
    expect(sent).toHaveLength(2); // busy: no EXISTS
  },
);

test('a publisher batch is two round trips when told events were recorded, three otherwise', async () => {
  await drain(handRecorder(db));
  await sql`DELETE FROM events_unpublished`.execute(db);
  const logs = new LogCapture('recorder');
  const publisher = new Publisher(
    db,
    connection,
    { exchange, expressExchange: express, batchSize: 100, publishTimeoutMs: 10_000 },
    logs.logger,
  );
  try {
    await createTrips(25);
    await drain(handRecorder(db));
    sent = [];
    expect(await publisher.runBatch()).toBe(25);
    expect(sent).toHaveLength(3); // EXISTS; BEGIN + lock + head; DELETE + COMMIT

    await createTrips(25);
    await drain(handRecorder(db));
    publisher.expect();
    sent = [];
    expect(await publisher.runBatch()).toBe(25);
    expect(sent).toHaveLength(2);
  } finally {
    await publisher.close();
  }
});
