import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { createDb, createPool, type Database } from '../src/index.ts';
import { createAgency } from '../src/repositories/agencies.ts';
import { recordAttempts } from '../src/repositories/webhook-attempts.ts';
import { activeDeliveryTargets, createWebhook, findDeliveryTargets } from '../src/repositories/webhooks.ts';
import { preparedName, sendQueriesLean } from '../src/fast-paths/index.ts';

let t: TestDatabase;
// One connection, so every statement below runs on the session whose prepared statements are read.
let db: Kysely<Database>;
beforeAll(async () => {
  t = await createTestDatabase();
  db = createDb(t.url, { max: 1 });
});
afterAll(async () => {
  await db.destroy();
  await t.drop();
});

const preparedOnThisConnection = async () =>
  (await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(db)).rows.map(
    (r) => r.name,
  );

test('marked statements are prepared once per connection and answer as before; unmarked ones are not', async () => {
  const agency = await createAgency(db, { name: 'Links & Co' });
  const { webhook } = await createWebhook(db, {
    agencyId: agency.id,
    url: 'https://hooks.example/a',
    eventTypes: ['trip.created'],
  });
  expect(await preparedOnThisConnection()).toEqual([]);

  for (let i = 0; i < 3; i++) {
    const attempt = {
      webhookId: webhook.id,
      eventId: `evt_${i}`,
      eventType: 'trip.created',
      attempt: 1,
      attemptedAt: new Date(),
      durationMs: 5,
      statusCode: 500,
      error: 'http_status',
      responseBody: 'no',
    };
    await recordAttempts(db, [attempt]);
  }
  const byId = await findDeliveryTargets(db, [webhook.id]);
  const active = await activeDeliveryTargets(db, [agency.id]);

  // The same answers a fresh, unprepared reading gives.
  expect(byId).toEqual(active);
  expect(byId).toMatchObject([{ id: webhook.id, url: 'https://hooks.example/a', epoch: webhook.epoch }]);
  const logged = await db.selectFrom('webhook_attempts').select('event_id').orderBy('event_id').execute();
  expect(logged.map((r) => r.event_id)).toEqual(['evt_0', 'evt_1', 'evt_2']);
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  expect(row.last_error).toBe('http_status (HTTP 500)');
  expect(row.failing_since).not.toBeNull();

  // Three statements: the attempts batch (three calls, one statement) and the two WHERE clauses
  // of the targets read, which are two texts and so two names.
  const names = await preparedOnThisConnection();
  expect(names).toHaveLength(3);
  expect(names.filter((n) => n.startsWith('record_attempts_'))).toHaveLength(1);
  expect(names.filter((n) => n.startsWith('delivery_targets_'))).toHaveLength(2);
});

test('a statement name belongs to one text; unmarked text gets none', () => {
  const a = preparedName('/* prepared: sample */ SELECT 1');
  const b = preparedName('/* prepared: sample */ SELECT 2');
  expect(a).toMatch(/^sample_[0-9a-f]{12}$/);
  expect(b).toMatch(/^sample_[0-9a-f]{12}$/);
  expect(a).not.toBe(b);
  expect(preparedName('/* prepared: sample */ SELECT 1')).toBe(a);
  expect(preparedName('SELECT 1 /* prepared: sample */')).toBeUndefined();
  expect(preparedName('/* prepared: Bad-Name */ SELECT 1')).toBeUndefined();
});

test('after the connection is lost, its replacement prepares the statements again', async () => {
  const agency = await createAgency(db, { name: 'Dunes' });
  await activeDeliveryTargets(db, [agency.id]);
  const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
  await sql`SELECT pg_terminate_backend(${pid})`.execute(t.db);
  // Calls fail while the pool still holds the dead client; the pool drops it, and the next call
  // runs on a new connection, which has prepared nothing yet.
  let answer: unknown;
  for (let tries = 0; answer === undefined && tries < 20; tries++) {
    answer = await activeDeliveryTargets(db, [agency.id]).catch(() => undefined);
    if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(answer).toEqual([]);
  const newPid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
  expect(newPid).not.toBe(pid);
  expect((await preparedOnThisConnection()).filter((n) => n.startsWith('delivery_targets_'))).toHaveLength(1);
});

describe("every other text query goes through pg's callback form", () => {
  // A client of the pool under createDb, checked out, as kysely uses it.
  let pool: pg.Pool;
  let client: pg.PoolClient;
  beforeAll(async () => {
    pool = createPool(t.url, { max: 1 });
    client = await pool.connect();
  });
  afterAll(async () => {
    client.release();
    await pool.end();
  });

  test('pg is called with a callback for a text, named for a marked text, and as given otherwise', async () => {
    const calls: unknown[][] = [];
    const fake = {
      query(...args: unknown[]) {
        calls.push(args);
        const callback = args.at(-1);
        if (typeof callback === 'function') callback(null, { rows: [{ ok: true }] });
        return 'pg-own-answer';
      },
    };
    sendQueriesLean(fake as unknown as pg.PoolClient);
    const query = fake.query as (...args: unknown[]) => unknown;
    await expect(query('SELECT 1', [1])).resolves.toEqual({ rows: [{ ok: true }] });
    await expect(query('/* prepared: sample */ SELECT 1', [2])).resolves.toEqual({ rows: [{ ok: true }] });
    const config = { text: 'SELECT 1' };
    const callback = () => {};
    expect(query(config)).toBe('pg-own-answer');
    expect(query('SELECT 1', callback)).toBe('pg-own-answer');
    expect(query('SELECT 1', [], callback)).toBe('pg-own-answer');
    expect(calls).toEqual([
      ['SELECT 1', [1], expect.any(Function)],
      [
        {
          name: preparedName('/* prepared: sample */ SELECT 1'),
          text: '/* prepared: sample */ SELECT 1',
          values: [2],
        },
        expect.any(Function),
      ],
      [config, undefined, undefined],
      ['SELECT 1', callback, undefined],
      ['SELECT 1', [], callback],
    ]);
  });

  test('a text query answers as pg would', async () => {
    const result = await client.query('SELECT $1::int AS n, now() AS at', [7]);
    expect(result.rows).toEqual([{ n: 7, at: expect.any(Date) }]);
    expect(result.fields.map((f) => f.name)).toEqual(['n', 'at']);
    expect(result.rowCount).toBe(1);
  });

  test('a failing text query rejects with pg’s error, and the client goes on', async () => {
    await expect(client.query('SELECT * FROM no_such_table_here')).rejects.toMatchObject({
      code: '42P01',
      message: expect.stringContaining('no_such_table_here'),
    });
    expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  test('callbacks and config objects go to pg unchanged; the config is not given a callback', async () => {
    const viaCallback = await new Promise<pg.QueryResult>((resolve, reject) =>
      client.query('SELECT 2 AS two', (error: Error | null, result: pg.QueryResult) =>
        error ? reject(error) : resolve(result),
      ),
    );
    expect(viaCallback.rows).toEqual([{ two: 2 }]);
    const config = { text: 'SELECT $1::text AS s', values: ['x'] };
    expect((await client.query(config)).rows).toEqual([{ s: 'x' }]);
    expect(config).not.toHaveProperty('callback');
  });
});
