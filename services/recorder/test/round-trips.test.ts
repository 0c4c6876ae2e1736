// How many round trips to Postgres a batch costs (issue 30): on a busy machine they were most of
// what recording and publishing cost, in the recorder and in its Postgres backends. A recorder
// batch is two scripts (open + lock + read the outbox's head; write everything + commit), after an
// idle batch one EXISTS before them; a publisher batch is two (open + lock + read the head;
// forget what was confirmed + commit), plus the EXISTS unless told events were just recorded.
// A recorder batch that opens the publisher's batch after its commit (Publisher.open) makes the
// two three in all. However many changes the batch holds. A regression that adds a statement
// fails here.
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

function startPublisher(): Publisher {
  return new Publisher(
    db,
    connection,
    { exchange, expressExchange: express, batchSize: 100, publishTimeoutMs: 10_000 },
    new LogCapture('recorder').logger,
  );
}

/** The events that reached the queue since the last call, by id. */
async function arrived(): Promise<string[]> {
  return onAmqpChannel(async (ch) => {
    const ids: string[] = [];
    for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true }))
      ids.push(m.properties.messageId as string);
    return ids;
  });
}

const unpublishedIds = async () =>
  (await sql<{ id: string }>`SELECT id FROM events_unpublished ORDER BY seq`.execute(db)).rows.map(
    (r) => r.id,
  );

test('a recorder batch that opens the publisher’s batch: three round trips for both, the rows read once', async () => {
  const recorder = handRecorder(db, { batchSize: 100 });
  const publisher = startPublisher();
  try {
    await createTrips(1);
    await drain(recorder);
    await sql`DELETE FROM events_unpublished`.execute(db);
    await arrived();
    await createTrips(1);
    await recorder.runBatch(); // now busy: no EXISTS before the next
    await sql`DELETE FROM events_unpublished`.execute(db);

    await createTrips(30);
    sent = [];
    const batch = await recorder.runBatch(() => publisher.open());
    expect(batch.publishing).toBe(true);
    await publisher.settled();
    // BEGIN + lock + head; writes + COMMIT + BEGIN + lock + the head's seqs; DELETE + COMMIT
    expect(sent).toHaveLength(3);
    expect(sent[1]).toContain('SELECT seq FROM events_unpublished');
    expect(await unpublishedIds()).toEqual([]);
    expect(await arrived()).toEqual(batch.events.map((e) => e.id));
  } finally {
    await publisher.close();
  }
});

test('an opened batch behind older unpublished events reads the head’s rows and publishes them all, oldest first', async () => {
  const recorder = handRecorder(db, { batchSize: 100 });
  const publisher = startPublisher();
  try {
    await drain(recorder);
    await sql`DELETE FROM events_unpublished`.execute(db);
    await arrived();
    await createTrips(5);
    await drain(recorder); // recorded, not published: a backlog
    const older = await unpublishedIds();
    expect(older).toHaveLength(5);

    await createTrips(3);
    sent = [];
    const batch = await recorder.runBatch(() => publisher.open());
    expect(batch.publishing).toBe(true);
    await publisher.settled();
    // EXISTS (the recorder was idle), the three above, and the head's rows, which it did not hold
    expect(sent).toHaveLength(5);
    expect(sent[3]).toContain('SELECT * FROM events_unpublished');
    expect(await unpublishedIds()).toEqual([]);
    expect(await arrived()).toEqual([...older, ...batch.events.map((e) => e.id)]);
  } finally {
    await publisher.close();
  }
});

test('while a batch is under way the publisher opens none: the recorder’s batch leaves its events to the loop', async () => {
  const recorder = handRecorder(db, { batchSize: 100 });
  const publisher = startPublisher();
  try {
    await drain(recorder);
    await createTrips(2);
    const first = publisher.open();
    expect(first).toBeDefined();
    expect(publisher.open()).toBeUndefined();
    const batch = await recorder.runBatch(() => publisher.open());
    expect(batch.events).toHaveLength(2);
    expect(batch.publishing).toBe(false);
    first!.cancel();
    const again = publisher.open();
    expect(again).toBeDefined();
    again!.cancel();
  } finally {
    await publisher.close();
  }
});

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

test('a publisher batch over a backlog of several windows takes one after another in its transaction: six round trips for 250 events', async () => {
  await drain(handRecorder(db));
  await sql`DELETE FROM events_unpublished`.execute(db);
  await arrived();
  const publisher = startPublisher();
  try {
    await createTrips(250);
    await drain(handRecorder(db, { batchSize: 1000 }));
    const backlog = await unpublishedIds();
    expect(backlog).toHaveLength(250);
    sent = [];
    expect(await publisher.runBatch()).toBe(250);
    // EXISTS; BEGIN + lock + head; the walk (more than a window); forget 100 + take; forget 100 +
    // take (50, fewer than a window: the last); DELETE + COMMIT
    expect(sent).toHaveLength(6);
    expect(await unpublishedIds()).toEqual([]);
    expect(await arrived()).toEqual(backlog);
  } finally {
    await publisher.close();
  }
});
