import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, OutboxRow } from '../schema.ts';

/**
 * Advisory lock keys (pg_advisory_xact_lock). RECORD serializes every writer of the events table
 * (recorder batches, group emission, partition upkeep) across replicas; PUBLISH elects the one
 * replica that publishes, so messages leave in seq order. Transaction-level: a crashed holder
 * releases them with its connection.
 */
export const RECORD_LOCK = 7_263_101;
export const PUBLISH_LOCK = 7_263_102;

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Claims up to `limit` captured changes, round-robin across agencies: the oldest change of every
 * agency that has one, then the second of each, and so on (rows in the order (turn within the
 * agency, id)). Claimed in id order alone, one agency's bulk import held every other agency's
 * changes back until all of its own were recorded.
 *
 * Why the order stays right: per agency the claim takes a prefix in id order, and the rows come
 * back in id order within each agency, so each agency's changes are recorded in id order, as they
 * were with one queue. Two changes of one row are serialized by the row's lock, so the later one
 * gets the larger id and cannot be visible without the earlier; an object's changes all carry its
 * agency, so per object id order is commit order and the earlier change is in the same prefix.
 * Changes of different objects need no order between them. Rows of transactions still open are
 * invisible and are claimed by a later batch. Why no FOR UPDATE SKIP LOCKED: callers hold
 * RECORD_LOCK, so no other recorder reads the outbox now, and writers only insert.
 *
 * Why this shape: the agencies are found by a loose index scan on outbox (agency_id, id)
 * (migration 0014), one probe per agency, and their ids are then read from that index in rounds
 * of ceil(limit / agencies) per agency, each round after the first only for the agencies that
 * filled the one before. The walk yields whole rounds in order, and Postgres computes a recursive
 * query only as far as it is read: it stops once it has handed out enough rows to hold the round
 * with the last turn needed. So a claim reads at most about twice `limit` index entries plus one
 * probe per agency, however long the queue and however many agencies have one: never a window over
 * the whole outbox, nor `limit` entries for every agency. Only the chosen rows are fetched whole,
 * one primary-key lookup each.
 *
 * The planner settings hold for this statement alone. The planner sizes a recursive query by rule
 * (a fixed number of agencies, a fixed number of rounds), so the claim looks costly enough to
 * JIT-compile, which takes far longer than the claim runs. And statistics are usually taken while
 * the outbox is nearly empty, so it expects a few rows per agency and would rather read and sort
 * all of a bulk importer's rows than walk the index.
 */
export async function claimOutbox(trx: Transaction<Database>, limit: number): Promise<OutboxRow[]> {
  await sql`SELECT set_config('jit', 'off', true), set_config('enable_seqscan', 'off', true),
                   set_config('enable_bitmapscan', 'off', true)`.execute(trx);
  const { rows } = await sql<OutboxRow>`
    WITH RECURSIVE agencies (agency_id) AS (
      (SELECT agency_id FROM outbox ORDER BY agency_id LIMIT 1)
      UNION ALL
      SELECT (SELECT o.agency_id FROM outbox o WHERE o.agency_id > a.agency_id ORDER BY o.agency_id LIMIT 1)
        FROM agencies a WHERE a.agency_id IS NOT NULL
    ), chunk AS (
      SELECT count(*) AS agencies, ceil(${limit}::numeric / greatest(count(*), 1))::int AS size
        FROM agencies WHERE agency_id IS NOT NULL
    ), walk (agency_id, id, turn, n) AS (
      -- turn: the row's place in its agency's queue; n: its place in this round's chunk (= size:
      -- the chunk was full, so the agency may have more).
      SELECT a.agency_id, c.id, c.n, c.n FROM agencies a
       CROSS JOIN LATERAL (
         SELECT o.id, row_number() OVER (ORDER BY o.id) AS n FROM outbox o
          WHERE o.agency_id = a.agency_id ORDER BY o.id LIMIT (SELECT size FROM chunk)
       ) c
       WHERE a.agency_id IS NOT NULL
      UNION ALL
      SELECT w.agency_id, c.id, w.turn + c.n, c.n FROM walk w
       CROSS JOIN LATERAL (
         SELECT o.id, row_number() OVER (ORDER BY o.id) AS n FROM outbox o
          WHERE o.agency_id = w.agency_id AND o.id > w.id ORDER BY o.id LIMIT (SELECT size FROM chunk)
       ) c
       -- No turn past limit is ever needed: this bounds the walk even were it computed in full.
       WHERE w.n = (SELECT size FROM chunk) AND w.turn < ${limit}
    ), turns AS (
      -- The rounds before the one holding the last turn needed make fewer than limit rows, and a
      -- round at most agencies * size: the first that many rows hold that whole round.
      SELECT id, turn FROM (SELECT * FROM walk LIMIT ${limit} + (SELECT agencies * size FROM chunk)) w
       ORDER BY turn, id LIMIT ${limit}
    )
    -- LIMIT 1 keeps this a lookup per chosen id, never a join over the whole outbox.
    SELECT c.* FROM turns t
     CROSS JOIN LATERAL (SELECT * FROM outbox o WHERE o.id = t.id LIMIT 1) c
     ORDER BY t.turn, t.id`.execute(trx);
  await sql.raw('RESET jit; RESET enable_seqscan; RESET enable_bitmapscan').execute(trx);
  return rows;
}

/** Deletes claimed rows, in the same transaction that recorded their events: exactly once. */
export async function deleteOutbox(trx: Transaction<Database>, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`DELETE FROM outbox WHERE id = ANY(${ids}::bigint[])`.execute(trx);
}

/** How many changes wait to be recorded: the recorder's backlog, for metrics and benchmarks. */
export async function countOutbox(db: Db): Promise<number> {
  const row = await db
    .selectFrom('outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
