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
 * Claims the oldest captured changes, in id order.
 *
 * Why no FOR UPDATE SKIP LOCKED: callers hold RECORD_LOCK, so no other recorder reads the outbox
 * now, and writers only insert. Why id order is enough: two changes of one row are serialized by
 * the row's lock, so the later one gets the larger id and cannot be visible without the earlier;
 * per object, id order is commit order. Changes of different objects need no order between them.
 * Rows of transactions still open are invisible and are claimed by a later batch.
 */
export async function claimOutbox(trx: Transaction<Database>, limit: number): Promise<OutboxRow[]> {
  return trx.selectFrom('outbox').selectAll().orderBy('id').limit(limit).execute();
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
