import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';
import { runScript, type Statement } from '../script.ts';

/** The queue tables taken round-robin across agencies, each with the column that orders it. */
type Queue = { table: 'outbox'; order: 'id' } | { table: 'events_unpublished'; order: 'seq' };

/**
 * Up to `limit` rows of a queue table, round-robin across agencies: the oldest row of every agency
 * that has one, then the second of each, and so on, in the order (turn within the agency, order
 * column). The recorder's claim of the outbox (claimOutbox) and its publisher's take of unpublished
 * events (takeUnpublished) are this walk; each table has an index on (agency_id, order column).
 *
 * Why this shape: the agencies are found by a loose index scan on that index, one probe per
 * agency, and their rows are then read from it in rounds of ceil(limit / agencies) per agency,
 * each round after the first only for the agencies that filled the one before. So an agency with
 * fewer rows than its share leaves the rest to the agencies that have more, and the take is full
 * whenever `limit` rows wait. The walk yields whole rounds in order, and Postgres computes a
 * recursive query only as far as it is read: it stops once it has handed out enough rows to hold
 * the round with the last turn needed. So a take reads at most about twice `limit` index entries
 * plus one probe per agency, however long the queue and however many agencies have one: never a
 * window over the whole table, nor `limit` entries for every agency. Only the chosen rows are
 * fetched whole, one primary-key lookup each.
 *
 * The planner settings hold for this statement alone. The planner sizes a recursive query by rule
 * (a fixed number of agencies, a fixed number of rounds), so the take looks costly enough to
 * JIT-compile, which takes far longer than the take runs. And statistics are usually taken while
 * the table is nearly empty, so it expects a few rows per agency and would rather read and sort
 * all of a bulk importer's rows than walk the index.
 */
export async function takeRoundRobin<Row extends { agency_id: string }>(
  db: Kysely<Database> | Transaction<Database>,
  queue: Queue,
  limit: number,
  head?: readonly Row[] | 'longer',
): Promise<Row[]> {
  // Most takes find the whole queue shorter than `limit`: a recorder keeping up takes what a few
  // milliseconds of writes left. Then every row is taken, and only their order is the walk's,
  // which is put right here; the walk below, planned afresh each time, is for a backlog. A caller
  // may have read the head already, in a script with other statements (queueHead), or know the
  // queue is longer than `limit` ('longer'): then the head's rows would only be read to be dropped.
  if (head !== 'longer') {
    head ??= (await db.executeQuery<Row>(queueHead(queue, limit))).rows;
    if (head.length <= limit) return inTurns(head);
  }
  return walkRoundRobin<Row>(db, queue, limit);
}

/**
 * takeRoundRobin's walk alone, whatever the queue's length, after `before`, statements of the
 * same transaction sent in the same round trip (the publisher forgets the rows it took last).
 */
export async function walkRoundRobin<Row>(
  db: Kysely<Database> | Transaction<Database>,
  queue: Queue,
  limit: number,
  before: readonly Statement[] = [],
): Promise<Row[]> {
  const results = await runScript(db, [...before, ...walkScript(db, queue, limit)]);
  return results[before.length + WALK_ROWS] as Row[];
}

/**
 * The walk as statements of a script, for a caller that knows a backlog waits and so takes in the
 * round trip that opens its transaction: the rows are the answer of the statement at WALK_ROWS.
 */
export function walkScript(
  db: Kysely<Database> | Transaction<Database>,
  queue: Queue,
  limit: number,
): Statement[] {
  return [
    sql`SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true),
               set_config('enable_bitmapscan', 'off', true)`.compile(db),
    walk(queue, limit).compile(db),
    ...['jit', 'enable_seqscan', 'enable_bitmapscan'].map((setting) => CompiledQuery.raw(`RESET ${setting}`)),
  ];
}

/** Where in walkScript's statements the rows are. */
export const WALK_ROWS = 1;

/** The queue's first `limit + 1` rows in queue order: all of it, or a backlog (takeRoundRobin). */
export function queueHead({ table, order }: Queue, limit: number): CompiledQuery {
  return CompiledQuery.raw(`SELECT * FROM ${table} ORDER BY ${order} LIMIT $1`, [limit + 1]);
}

function walk({ table, order }: Queue, limit: number) {
  const t = sql.table(table);
  const key = sql.ref(`q.${order}`);
  return sql`
    WITH RECURSIVE agencies (agency_id) AS (
      (SELECT agency_id FROM ${t} ORDER BY agency_id LIMIT 1)
      UNION ALL
      SELECT (SELECT q.agency_id FROM ${t} q WHERE q.agency_id > a.agency_id ORDER BY q.agency_id LIMIT 1)
        FROM agencies a WHERE a.agency_id IS NOT NULL
    ), chunk AS (
      SELECT count(*) AS agencies, ceil(${limit}::numeric / greatest(count(*), 1))::int AS size
        FROM agencies WHERE agency_id IS NOT NULL
    ), walk (agency_id, pos, turn, n) AS (
      -- pos: the row's order column; turn: its place in its agency's queue; n: its place in this
      -- round's chunk (= size: the chunk was full, so the agency may have more).
      SELECT a.agency_id, c.pos, c.n, c.n FROM agencies a
       CROSS JOIN LATERAL (
         SELECT ${key} AS pos, row_number() OVER (ORDER BY ${key}) AS n FROM ${t} q
          WHERE q.agency_id = a.agency_id ORDER BY ${key} LIMIT (SELECT size FROM chunk)
       ) c
       WHERE a.agency_id IS NOT NULL
      UNION ALL
      SELECT w.agency_id, c.pos, w.turn + c.n, c.n FROM walk w
       CROSS JOIN LATERAL (
         SELECT ${key} AS pos, row_number() OVER (ORDER BY ${key}) AS n FROM ${t} q
          WHERE q.agency_id = w.agency_id AND ${key} > w.pos ORDER BY ${key} LIMIT (SELECT size FROM chunk)
       ) c
       -- No turn past limit is ever needed: this bounds the walk even were it computed in full.
       WHERE w.n = (SELECT size FROM chunk) AND w.turn < ${limit}
    ), turns AS (
      -- The rounds before the one holding the last turn needed make fewer than limit rows, and a
      -- round at most agencies * size: the first that many rows hold that whole round.
      SELECT pos, turn FROM (SELECT * FROM walk LIMIT ${limit} + (SELECT agencies * size FROM chunk)) w
       ORDER BY turn, pos LIMIT ${limit}
    )
    -- LIMIT 1 keeps this a lookup per chosen row, never a join over the whole table.
    SELECT r.* FROM turns t
     CROSS JOIN LATERAL (SELECT * FROM ${t} q WHERE ${key} = t.pos LIMIT 1) r
     ORDER BY t.turn, t.pos`;
}

/**
 * Rows in queue order, put in the walk's order: every agency's first, then every agency's second,
 * and so on, in queue order within each turn.
 */
function inTurns<Row extends { agency_id: string }>(rows: readonly Row[]): Row[] {
  const taken = new Map<string, number>();
  return rows
    .map((row, place) => {
      const turn = (taken.get(row.agency_id) ?? 0) + 1;
      taken.set(row.agency_id, turn);
      return { row, turn, place };
    })
    .sort((a, b) => a.turn - b.turn || a.place - b.place)
    .map(({ row }) => row);
}
