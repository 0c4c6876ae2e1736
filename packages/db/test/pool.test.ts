import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { createPool } from '../src/index.ts';

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
