// The contract of the fast paths (src/fast-paths/index.ts says what each relies on in pg's and
// kysely's internals). Each test here holds one of those assumptions against the pg and kysely
// installed, so an upgrade that takes one away fails here, where otherwise the service would only
// get slower, or answer other rows, without an error.
import { CompiledQuery, Kysely, PostgresDialect, sql, type QueryResult } from 'kysely';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { createDb, createPool, type Database } from '../src/index.ts';
import { createAgency } from '../src/repositories/agencies.ts';
import { findContact } from '../src/repositories/contacts.ts';
import { findPayment } from '../src/repositories/payments.ts';
import { findTrip } from '../src/repositories/trips.ts';
import {
  findContactPrecompiled,
  findPaymentPrecompiled,
  findTripPrecompiled,
  preparedName,
} from '../src/fast-paths/index.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

/** A one-connection pool's session: what it has prepared, and how often each ran. */
const preparedStatements = async (db: Kysely<Database>) =>
  (
    await sql<{ name: string; runs: number }>`
      SELECT name, generic_plans + custom_plans AS runs FROM pg_prepared_statements ORDER BY name`.execute(db)
  ).rows;

const MARKED = '/* prepared: fast_path_contract */ SELECT $1::int AS n, $2::text AS s';
const UNMARKED = 'SELECT $1::int AS n, $2::text AS s';

describe('the lean client query', () => {
  test("kysely hands pg's client a text and an array; the fast path sends it by pg's callback form, named when marked", async () => {
    // Every call that reaches pg's own Client.query, for the clients opened while this is in place.
    const reached: { args: unknown[]; returned: unknown }[] = [];
    const original = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
      const returned = (original as (...a: unknown[]) => unknown).apply(this, args);
      reached.push({ args, returned });
      return returned;
    } as unknown as typeof original;
    const db = createDb(t.url, { max: 1 });
    try {
      await db.executeQuery(CompiledQuery.raw(UNMARKED, [1, 'a']));
      await db.executeQuery(CompiledQuery.raw(MARKED, [2, 'b']));
    } finally {
      pg.Client.prototype.query = original;
      await db.destroy();
    }
    const ours = reached.filter(({ args }) => JSON.stringify(args).includes('$2::text AS s'));
    expect(ours).toEqual([
      // pg builds no promise of its own (it answers nothing) and calls back instead.
      { args: [UNMARKED, [1, 'a'], expect.any(Function)], returned: undefined },
      {
        args: [{ name: preparedName(MARKED), text: MARKED, values: [2, 'b'] }, expect.any(Function)],
        returned: undefined,
      },
    ]);
  });

  test('a marked statement is parsed once per connection and then only run: pg remembers the names it has prepared', async () => {
    const db = createDb(t.url, { max: 1 });
    try {
      for (let n = 0; n < 5; n++) {
        const { rows } = await db.executeQuery(CompiledQuery.raw(MARKED, [n, `run ${n}`]));
        expect(rows).toEqual([{ n, s: `run ${n}` }]);
      }
      await db.executeQuery(CompiledQuery.raw(UNMARKED, [0, 'unmarked']));
      expect(await preparedStatements(db)).toEqual([{ name: preparedName(MARKED), runs: 5 }]);
    } finally {
      await db.destroy();
    }
  });

  test('answers what kysely answers through a pg pool left as pg made it', async () => {
    const plainPool = new pg.Pool({ connectionString: t.url, max: 1 });
    const plain = new Kysely<Database>({ dialect: new PostgresDialect({ pool: plainPool }) });
    const lean = createDb(t.url, { max: 1 });
    await sql`CREATE TABLE fast_path_probe (id int PRIMARY KEY, note text)`.execute(t.db);
    await sql`INSERT INTO fast_path_probe SELECT g, 'seed' FROM generate_series(1, 3) g`.execute(t.db);
    const at = new Date('2027-04-10T08:30:00.123Z');
    const queries = [
      [
        `SELECT $1::int AS n, $2::text AS s, $3::timestamptz AS at, '2027-04-10'::date AS d, 20::bigint AS big,
                '{"a": [1, null]}'::jsonb AS j, ARRAY['x', 'y'] AS arr, NULL::text AS nothing, 1.50::numeric AS dec`,
        [7, 'é', at],
      ],
      [
        `/* prepared: fast_path_types */ SELECT $1::int AS n, $2::timestamptz AS at, 20::bigint AS big`,
        [8, at],
      ],
      [`SELECT id FROM fast_path_probe WHERE id > $1 ORDER BY id`, [10]],
      [`UPDATE fast_path_probe SET note = $1 WHERE id <= 2`, ['updated']],
      [
        `/* prepared: fast_path_upsert */ INSERT INTO fast_path_probe (id, note) VALUES ($1, $2)
           ON CONFLICT (id) DO UPDATE SET note = excluded.note RETURNING id, note`,
        [9, 'upserted'],
      ],
      [`DELETE FROM fast_path_probe WHERE id > $1`, [100]],
    ] as const;
    const run = async (db: Kysely<Database>) => {
      const results: QueryResult<unknown>[] = [];
      for (const [text, values] of queries)
        results.push(await db.executeQuery(CompiledQuery.raw(text, [...values])));
      return results;
    };
    // A transaction whose failure was caught inside it: Postgres answers its COMMIT with ROLLBACK,
    // which kysely reads from the result's `command`.
    const abortedCommit = (db: Kysely<Database>) =>
      db
        .transaction()
        .execute(async (trx) => {
          await sql`SELECT * FROM no_such_table_here`.execute(trx).catch(() => undefined);
        })
        .then(
          () => 'committed',
          (error: Error) => error.name,
        );
    const failure = (db: Kysely<Database>) =>
      sql`SELECT * FROM no_such_table_here`.execute(db).then(
        () => undefined,
        (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }),
      );
    try {
      const expected = await run(plain);
      expect(expected.map((r) => r.numAffectedRows)).toEqual([undefined, undefined, undefined, 2n, 1n, 0n]);
      expect(await run(lean)).toEqual(expected);
      expect(await abortedCommit(lean)).toBe(await abortedCommit(plain));
      expect(await abortedCommit(lean)).toBe('AbortedTransactionError');
      expect(await failure(lean)).toEqual(await failure(plain));
      expect(await failure(lean)).toMatchObject({ code: '42P01' });
    } finally {
      await plain.destroy();
      await lean.destroy();
    }
  });
  test("a script sent by kysely answers each statement's rows; pg's own callers still get pg's array", async () => {
    const pool = createPool(t.url, { max: 1 });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    try {
      const viaKysely = await sql.raw('SELECT 1 AS a; SELECT 2 AS b, 3 AS c').execute(db);
      expect(viaKysely.rows).toEqual([[{ a: 1 }], [{ b: 2, c: 3 }]]);
      const client = await pool.connect();
      try {
        const own = (await client.query('SELECT 1 AS a; SELECT 2 AS b')) as unknown as pg.QueryResult[];
        expect(own.map((r) => r.rows)).toEqual([[{ a: 1 }], [{ b: 2 }]]);
      } finally {
        client.release();
      }
    } finally {
      await db.destroy();
    }
  });
});

describe('the precompiled lookups', () => {
  let own: string;
  let other: string;
  let ids: { trip: string; template: string; payment: string; contact: string };
  beforeAll(async () => {
    own = (await createAgency(t.db, { name: 'Links & Co' })).id;
    other = (await createAgency(t.db, { name: 'Dunes' })).id;
    const trip = await t.db
      .insertInto('trips')
      .values({ agency_id: own, title: 'Algarve spring', num_days: 7, start_date: '2027-04-10' })
      .returning('id')
      .executeTakeFirstOrThrow();
    await t.db.insertInto('itineraries').values({ trip_id: trip.id, non_golfers: 2 }).execute();
    const template = await t.db
      .insertInto('trips')
      .values({ agency_id: own, title: 'Template', num_days: 3, is_template: true })
      .returning('id')
      .executeTakeFirstOrThrow();
    const payment = await t.db
      .insertInto('payments')
      .values({
        agency_id: own,
        trip_id: trip.id,
        description: 'Deposit',
        amount: 1,
        currency: 'EUR',
        visibility: 'shown',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const contact = await t.db
      .insertInto('contacts')
      .values({ agency_id: own, first_name: 'Rory', last_name: 'Fairway' })
      .returning('id')
      .executeTakeFirstOrThrow();
    await t.db
      .insertInto('trip_contacts')
      .values({ agency_id: own, trip_id: trip.id, contact_id: contact.id })
      .execute();
    ids = { trip: trip.id, template: template.id, payment: payment.id, contact: contact.id };
  });

  const lookups = () =>
    [
      { name: 'find_trip', built: findTrip, replayed: findTripPrecompiled, ids: [ids.trip, ids.template] },
      { name: 'find_payment', built: findPayment, replayed: findPaymentPrecompiled, ids: [ids.payment] },
      { name: 'find_contact', built: findContact, replayed: findContactPrecompiled, ids: [ids.contact] },
    ] as const;

  test('each replays the SQL kysely compiles for its finder, with the same parameters, marked to be prepared', async () => {
    const logged: CompiledQuery[] = [];
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: createPool(t.url, { max: 1 }) }),
      log: (event) => {
        if (event.level === 'query') logged.push(event.query);
      },
    });
    try {
      for (const { name, built, replayed, ids: found } of lookups()) {
        for (const id of [...found, 'missing']) {
          logged.length = 0;
          await built(db, own, id);
          await replayed(db, own, id);
          expect(logged).toHaveLength(2);
          const [compiled, sent] = logged as [CompiledQuery, CompiledQuery];
          expect(sent.sql).toBe(`/* prepared: ${name} */ ${compiled.sql}`);
          expect(preparedName(sent.sql)).toMatch(new RegExp(`^${name}_[0-9a-f]{12}$`));
          expect(sent.parameters).toEqual(compiled.parameters);
          expect(sent.parameters).toEqual(expect.arrayContaining([own, id]));
        }
      }
    } finally {
      await db.destroy();
    }
  });

  test('each answers the rows its finder answers, and is prepared once per connection', async () => {
    const db = createDb(t.url, { max: 1 });
    try {
      let calls = 0;
      for (const { built, replayed, ids: found } of lookups()) {
        for (const agencyId of [own, other]) {
          for (const id of [...found, 'missing']) {
            expect(await replayed(db, agencyId, id)).toEqual(await built(db, agencyId, id));
            calls++;
          }
        }
      }
      expect(await findTripPrecompiled(db, own, ids.trip)).toMatchObject({ id: ids.trip, non_golfers: 2 });
      expect(await findPaymentPrecompiled(db, own, ids.payment)).toMatchObject({
        id: ids.payment,
        amount: 1,
      });
      expect(await findContactPrecompiled(db, own, ids.contact)).toMatchObject({ trip_ids: [ids.trip] });
      expect(await findTripPrecompiled(db, own, ids.template)).toBeUndefined();
      const prepared = await preparedStatements(db);
      expect(prepared.map((p) => p.name.replace(/_[0-9a-f]{12}$/, ''))).toEqual([
        'find_contact',
        'find_payment',
        'find_trip',
      ]);
      expect(prepared.reduce((sum, p) => sum + p.runs, 0)).toBe(calls + 4);
    } finally {
      await db.destroy();
    }
  });
});
