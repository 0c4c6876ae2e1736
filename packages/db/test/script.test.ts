// Scripts (src/script.ts): several statements in one round trip, their parameters written in as
// literals. What must hold: every value comes back as the same value a bound parameter gives
// (so no value can end its literal and become SQL), each statement answers its own rows, and a
// failing statement stops the rest and leaves a transaction the caller can roll back.
import { CompiledQuery, sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { createDb } from '../src/index.ts';
import { begin, commit, inline, literal, rollback, runScript } from '../src/script.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const NASTY = [
  "it's",
  "'); DROP TABLE outbox; --",
  "back\\slash \\' mixed",
  '"quoted", {braced}, NULL',
  'line\nbreak\ttab',
  'ünïcødé ☃ 🏌️',
  '',
  '$1 $$ dollar',
];

test('every value comes back as the same value as when bound as a parameter', async () => {
  const db = createDb(t.url, { max: 1 });
  try {
    const when = new Date('2026-11-26T10:11:12.345Z');
    const query = CompiledQuery.raw(
      'SELECT $1::text[] AS texts, $2::int AS n, $3::timestamptz AS at, $4::jsonb AS doc, $5::boolean AS yes, $6::text AS none, $7::bigint[] AS ids',
      [NASTY, -42, when, { a: "b'c", d: [1, null] }, true, null, [1, 2, 9_007_199_254_740_991]],
    );
    const bound = (await db.executeQuery(query)).rows;
    const [inlined] = await runScript(db, [query]);
    expect(inlined).toEqual(bound);
    expect(inlined).toEqual([
      {
        texts: NASTY,
        n: -42,
        at: when,
        doc: { a: "b'c", d: [1, null] },
        yes: true,
        none: null,
        ids: ['1', '2', '9007199254740991'],
      },
    ]);
    // An array's NULL element stays a NULL, not the text 'NULL'.
    const nulls = await runScript(db, [CompiledQuery.raw('SELECT $1::text[] AS a', [['NULL', null]])]);
    expect(nulls).toEqual([[{ a: ['NULL', null] }]]);
  } finally {
    await db.destroy();
  }
});

test('a script answers each statement its own rows, in order, each seeing the ones before', async () => {
  const db = createDb(t.url, { max: 1 });
  try {
    const results = await runScript(db, [
      CompiledQuery.raw('CREATE TEMP TABLE script_probe (v text)'),
      CompiledQuery.raw('INSERT INTO script_probe VALUES ($1), ($2) RETURNING v', ['a', "b'"]),
      CompiledQuery.raw('SELECT count(*)::int AS n FROM script_probe'),
    ]);
    expect(results).toEqual([[], [{ v: 'a' }, { v: "b'" }], [{ n: 2 }]]);
  } finally {
    await db.destroy();
  }
});

test('a failing statement stops the rest; the open transaction rolls back and the connection goes on', async () => {
  const db = createDb(t.url, { max: 1 });
  try {
    await sql`CREATE TABLE script_rollback (v int)`.execute(db);
    await db.connection().execute(async (conn) => {
      await expect(
        runScript(conn, [
          begin,
          CompiledQuery.raw('INSERT INTO script_rollback VALUES (1)'),
          CompiledQuery.raw('SELECT 1 / $1 AS boom', [0]),
          CompiledQuery.raw('INSERT INTO script_rollback VALUES (2)'),
          commit,
        ]),
      ).rejects.toThrow(/division by zero/);
      await rollback(conn);
      const counted = await runScript(conn, [
        CompiledQuery.raw('SELECT count(*)::int AS n FROM script_rollback'),
      ]);
      expect(counted).toEqual([[{ n: 0 }]]);
    });
  } finally {
    await db.destroy();
  }
});

test('inline refuses what it cannot write faithfully', () => {
  expect(() => inline(CompiledQuery.raw('SELECT $2', [1]))).toThrow(/no parameter for \$2/);
  expect(() => literal(Number.NaN)).toThrow(/not a number/);
  expect(literal("it's")).toBe("'it''s'");
  expect(literal('a\\b')).toBe(" E'a\\\\b'");
});
