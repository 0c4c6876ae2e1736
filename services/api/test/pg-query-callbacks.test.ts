import pg from 'pg';
import { createTestDatabase } from '@trips/testkit';
import {
  answerPgQueriesThroughCallbacks,
  throughCallbacks,
  type QueryFn,
} from '../src/pg-query-callbacks.ts';
import { startTestApi } from './support.ts';

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
});
afterAll(() => client.end());

const installed = () =>
  (pg.Client.prototype as unknown as Record<symbol, unknown>)[Symbol.for('trips.api.pgQueryCallbacks')];

test('the API installs it when it starts', async () => {
  expect(installed()).toBeUndefined();
  const t = await createTestDatabase();
  const api = await startTestApi(t);
  try {
    expect(installed()).toBe(true);
  } finally {
    await api.stop();
    await t.drop();
  }
});

test('a text without a callback reaches pg with one; anything else reaches it as given', async () => {
  const calls: unknown[][] = [];
  const fake: QueryFn = function (...args) {
    calls.push(args);
    const callback = args[2];
    if (typeof callback === 'function') callback(null, { rows: [{ ok: true }] });
    return 'pg-own-answer';
  };
  const query = throughCallbacks(fake);
  const client = {} as pg.Client;
  await expect(query.call(client, 'SELECT 1', [1])).resolves.toEqual({ rows: [{ ok: true }] });
  expect(calls[0]).toEqual(['SELECT 1', [1], expect.any(Function)]);
  const config = { text: 'SELECT 1' };
  const callback = () => {};
  expect(query.call(client, config)).toBe('pg-own-answer');
  expect(query.call(client, 'SELECT 1', callback)).toBe('pg-own-answer');
  expect(query.call(client, 'SELECT 1', [], callback)).toBe('pg-own-answer');
  expect(calls.slice(1)).toEqual([
    [config, undefined, undefined],
    ['SELECT 1', callback, undefined],
    ['SELECT 1', [], callback],
  ]);
});

test('installing twice wraps pg once', () => {
  const wrapped = pg.Client.prototype.query;
  answerPgQueriesThroughCallbacks();
  expect(pg.Client.prototype.query).toBe(wrapped);
});

test('a text query answers the same result through the callback form', async () => {
  const pending = client.query('SELECT $1::int AS n, now() AS at', [7]);
  expect(pending).toBeInstanceOf(Promise);
  // pg holds the query with our callback, not with a promise of its own.
  expect(
    typeof (client as unknown as { _getActiveQuery(): { callback?: unknown } })._getActiveQuery()?.callback,
  ).toBe('function');
  const result = await pending;
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
