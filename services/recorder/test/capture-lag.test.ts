// The capture time of a change goes past the recorder: kept in events_unpublished beside the event,
// sent in its message's `captured_at` header (for the dispatcher's capture → delivery), and timed
// to RabbitMQ's confirm in trips_change_capture_to_publish_seconds. Whichever way the event is
// published: by the running recorder, after a crash left it unpublished, or as a group's event.
import { sql } from 'kysely';
import { capturedAtOf } from '@trips/broker';
import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  sample,
  scrapeMetrics,
  waitFor,
  type ReceivedMessage,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';
import { drain, handRecorder, hostWrite, silent, sleep } from './helpers.ts';

const CAPTURE = 'trips_change_capture_to_publish_seconds';
const RECORD = 'trips_event_record_to_publish_seconds';

let t: TestDatabase;
let prefix: string;
let queue: TestQueue;
let service: RecorderService | undefined;
beforeAll(async () => {
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  queue = await collectEvents(prefix);
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_C', 'Capture')`);
});
afterAll(async () => {
  await service?.stop();
  await queue.close();
  await deleteAmqpObjects({ exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`] });
  await t.drop();
});

/** The recorder as it runs, its groups due a second after their last change (at most 10 s). */
async function startRecorder(): Promise<RecorderService> {
  const config = readConfig({
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    RECORDER_HEALTH_PORT: '0',
    EVENT_GROUP_QUIET: '1s',
    EVENT_GROUP_MAX: '10s',
  });
  return startRecorderService(config, silent);
}

const scrape = () => scrapeMetrics(`http://127.0.0.1:${service!.healthPort}/metrics`);
const message = (predicate: (m: ReceivedMessage) => boolean, what: string) =>
  waitFor(() => queue.messages.find(predicate), { what });
/** The database's clock, which the capture trigger reads. */
const dbNow = async (db = t.db) =>
  (await sql<{ now: Date }>`SELECT clock_timestamp() AS now`.execute(db)).rows[0]!.now;

test('events a crash left unpublished carry their capture time when published later; one queued without it is not timed', async () => {
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_c1', 'agy_C', 'T', 3)`,
  );
  const { created_at: capturedAt } = await t.db
    .selectFrom('outbox')
    .select('created_at')
    .executeTakeFirstOrThrow();
  // Recorded, never published: what a crash between the two leaves behind.
  await drain(handRecorder(t.db));
  // And one queued by a recorder of the previous version, through 0017's record_events (kept for a
  // rolling update): it has no capture time.
  await sql`SELECT * FROM record_events(ARRAY['agy_C'], ARRAY['trip.created'], ARRAY['trip'],
                                        ARRAY['trp_old'], ARRAY['{}'], 10)`.execute(t.db);
  const queued = await t.db
    .selectFrom('events_unpublished')
    .select(['id', 'captured_at'])
    .orderBy('seq')
    .execute();
  expect(queued.map((e) => e.captured_at)).toEqual([capturedAt, null]);
  await sleep(1_000);

  service = await startRecorder();
  const fresh = await message((m) => m.messageId === queued[0]!.id, 'the event the crash left');
  const old = await message((m) => m.messageId === queued[1]!.id, "the previous version's event");
  expect(capturedAtOf(fresh.headers)).toEqual(capturedAt);
  expect(old.headers).toEqual({ agency_id: 'agy_C' });

  const text = await waitFor(
    async () => {
      const body = await scrape();
      return sample(body, `${RECORD}_count`) === 2 && body;
    },
    { what: 'both confirms observed' },
  );
  // One observation: the event without a capture time is not guessed at.
  expect(sample(text, `${CAPTURE}_count`)).toBe(1);
  expect(sample(text, `${CAPTURE}_count`, { grouped: 'false' })).toBe(1);
  expect(sample(text, `${CAPTURE}_sum`)).toBeGreaterThanOrEqual(1);
});

test('capture → publish counts the writer’s open transaction, which record → publish cannot see', async () => {
  const before = await scrape();
  await t.db.transaction().execute(async (trx) => {
    await sql`INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_c2', 'agy_C', 'Late', 2)`.execute(
      trx,
    );
    await sql`SELECT pg_sleep(1.5)`.execute(trx);
  });
  const text = await waitFor(
    async () => {
      const body = await scrape();
      return sample(body, `${CAPTURE}_count`)! > sample(before, `${CAPTURE}_count`)! && body;
    },
    { what: 'the late trip published' },
  );
  const delta = (name: string, labels: Record<string, string> = {}) =>
    sample(text, name, labels)! - (sample(before, name, labels) ?? 0);
  expect(delta(`${CAPTURE}_count`, { grouped: 'false' })).toBe(1);
  // Both end at the same confirm; the capture came 1.5 s before the commit, the recording after it.
  expect(delta(`${CAPTURE}_sum`) - delta(`${RECORD}_sum`)).toBeGreaterThanOrEqual(1.49);
  const { id } = await t.db
    .selectFrom('events')
    .select('id')
    .where('object_id', '=', 'trp_c2')
    .executeTakeFirstOrThrow();
  const sent = await message((m) => m.messageId === id, 'the late trip’s message');
  expect(capturedAtOf(sent.headers)).toBeInstanceOf(Date);
});

test('a grouped event is timed from its group’s first change, and carries that change’s capture time', async () => {
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_g', 'agy_C', 'Grouped', 2)`,
  );
  // The first change, bracketed by the database's clock; a second one 600 ms later extends the
  // group, which falls due a second after it.
  let first: { from: Date; to: Date } | undefined;
  await t.db.transaction().execute(async (trx) => {
    const from = await dbNow(trx);
    await sql`UPDATE trips SET title = 'Grouped, renamed' WHERE id = 'trp_g'`.execute(trx);
    first = { from, to: await dbNow(trx) };
  });
  await sleep(600);
  await hostWrite(t.db, `UPDATE trips SET title = 'Grouped, renamed again' WHERE id = 'trp_g'`);

  const updated = await message((m) => m.routingKey === 'trip.updated', 'the trip.updated event');
  const capturedAt = capturedAtOf(updated.headers)!;
  expect(capturedAt.getTime()).toBeGreaterThanOrEqual(first!.from.getTime());
  expect(capturedAt.getTime()).toBeLessThanOrEqual(first!.to.getTime());

  const text = await waitFor(
    async () => {
      const body = await scrape();
      return (sample(body, `${CAPTURE}_count`, { grouped: 'true' }) ?? 0) >= 1 && body;
    },
    { what: 'the grouped event timed' },
  );
  expect(sample(text, `${CAPTURE}_count`, { grouped: 'true' })).toBe(1);
  // Due 1 s after the second change, itself 600 ms after the first: from the last change it would
  // be about a second, from the recording next to nothing.
  expect(sample(text, `${CAPTURE}_sum`, { grouped: 'true' })).toBeGreaterThanOrEqual(1.55);
});
