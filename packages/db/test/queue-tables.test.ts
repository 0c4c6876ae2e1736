import pg from 'pg';
import { sql } from 'kysely';
import { createTestDatabase, vacuumStats, type TestDatabase } from '@trips/testkit';
import {
  DISPATCHER_QUEUE_TABLES,
  RECORDER_QUEUE_TABLES,
  vacuumQueueTables,
} from '../src/repositories/queue-tables.ts';

// The queue tables' vacuum (repositories/queue-tables.ts): it reclaims what the takes deleted, and
// a table someone else is vacuuming is skipped, not waited for.

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

const vacuums = (table: string) => vacuumStats(t.db, table);
const QUEUE_TABLES = [...RECORDER_QUEUE_TABLES, ...DISPATCHER_QUEUE_TABLES];

test('vacuums each queue table, leaving none of the rows the takes deleted', async () => {
  await sql`INSERT INTO agencies (id, name) VALUES ('agy_Q', 'Queues')`.execute(t.db);
  await sql`INSERT INTO trips (id, agency_id, title, num_days)
            SELECT 'trp_q' || i, 'agy_Q', 'T', 1 FROM generate_series(1, 200) i`.execute(t.db);
  await sql`DELETE FROM outbox`.execute(t.db);
  const before = await Promise.all(QUEUE_TABLES.map(vacuums));

  await vacuumQueueTables(t.db, RECORDER_QUEUE_TABLES);
  await vacuumQueueTables(t.db, DISPATCHER_QUEUE_TABLES);

  const after = await Promise.all(QUEUE_TABLES.map(vacuums));
  expect(after.map((a, i) => a.count - before[i]!.count)).toEqual([1, 1, 1]);
  expect(after[QUEUE_TABLES.indexOf('outbox')]!.dead).toBe(0);
});

test('a queue table another session is vacuuming is skipped, the others vacuumed', async () => {
  // VACUUM's own lock, held by another session as a concurrent vacuum (another replica's,
  // autovacuum's) would hold it.
  const other = new pg.Client({ connectionString: t.url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query('LOCK TABLE outbox IN SHARE UPDATE EXCLUSIVE MODE');
    const outbox = await vacuums('outbox');
    const unpublished = await vacuums('events_unpublished');

    let timer: NodeJS.Timeout | undefined;
    const vacuumed = vacuumQueueTables(t.db, ['outbox', 'events_unpublished']).then(() => 'done');
    const waited = new Promise((resolve) => (timer = setTimeout(resolve, 5_000, 'still waiting after 5 s')));
    expect(await Promise.race([vacuumed, waited])).toBe('done');
    clearTimeout(timer);

    expect((await vacuums('outbox')).count).toBe(outbox.count);
    expect((await vacuums('events_unpublished')).count).toBe(unpublished.count + 1);
  } finally {
    await other.query('ROLLBACK');
    await other.end();
  }
});
