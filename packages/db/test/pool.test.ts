import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { sql } from 'kysely';
import { createDb, createPool } from '../src/index.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

/** The backend pids of `n` connections checked out at once, then all given back. */
async function backendPids(pool: pg.Pool, n: number): Promise<number[]> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  try {
    const pids = await Promise.all(
      clients.map(
        async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid,
      ),
    );
    return pids.sort((a, b) => a - b);
  } finally {
    for (const c of clients) c.release();
  }
}

test('a pool keeps the connections it opened through a quiet spell; pg alone closes them', async () => {
  // pg closes a connection idle for idleTimeoutMillis (10 s by default); 100 ms here, on both.
  const ours = createPool(t.url, { max: 3 });
  ours.options.idleTimeoutMillis = 100;
  const naive = new pg.Pool({ connectionString: t.url, max: 3, idleTimeoutMillis: 100 });
  // As createPool does: pg's end() resolves before its clients' sockets have closed, and afterAll
  // drops this database WITH (FORCE) at once, whose termination of a client still closing would
  // otherwise be an unhandled 'error' on this pool and fail the test (seen once in CI).
  naive.on('error', () => {});
  try {
    const oursBefore = await backendPids(ours, 3);
    const naiveBefore = await backendPids(naive, 3);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(ours.totalCount).toBe(3);
    expect(await backendPids(ours, 3)).toEqual(oursBefore);
    expect(naive.totalCount).toBe(0);
    expect(await backendPids(naive, 3)).not.toEqual(naiveBefore);
  } finally {
    await Promise.all([ours.end(), naive.end()]);
  }
});

test('a connection whose server no longer takes writes is dropped, never handed out again; one a statement failed on is kept', async () => {
  // A session made read-only stands for a connection to a primary demoted under it, or to the
  // replica through a route not yet moved: every write on it fails with 25006, as long as it lives.
  const db = createDb(t.url, { max: 1 });
  try {
    const pid = async () =>
      (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
    const first = await pid();
    await sql`SELECT * FROM no_such_table`.execute(db).catch(() => {});
    expect(await pid()).toBe(first);
    const refused = await db
      .transaction()
      .execute(async (trx) => {
        await sql`SET default_transaction_read_only = on`.execute(trx);
        await sql`COMMIT`.execute(trx);
        await sql`CREATE TEMP TABLE spoiled (x int)`.execute(trx);
      })
      .catch((error: { code?: string }) => error.code);
    expect(refused).toBe('25006');
    expect(await pid()).not.toBe(first);
  } finally {
    await db.destroy();
  }
});
