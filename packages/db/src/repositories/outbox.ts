import { sql, type Transaction } from 'kysely';
import type { Database, OutboxRow } from '../schema.ts';
import { takeRoundRobin } from './round-robin.ts';

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
 * The walk, and why it is shaped so, is in round-robin.ts (the outbox's index is (agency_id, id),
 * migration 0014).
 */
export async function claimOutbox(trx: Transaction<Database>, limit: number): Promise<OutboxRow[]> {
  return takeRoundRobin<OutboxRow>(trx, { table: 'outbox', order: 'id' }, limit);
}

/** Deletes claimed rows, in the same transaction that recorded their events: exactly once. */
export async function deleteOutbox(trx: Transaction<Database>, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`DELETE FROM outbox WHERE id = ANY(${ids}::bigint[])`.execute(trx);
}
