import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database, OutboxRow } from '../schema.ts';
import type { Statement } from '../script.ts';
import { queueHead, takeRoundRobin, walkScript } from './round-robin.ts';

export { WALK_ROWS } from './round-robin.ts';

const OUTBOX = { table: 'outbox', order: 'id' } as const;

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
export async function claimOutbox(
  db: Kysely<Database> | Transaction<Database>,
  limit: number,
  head?: readonly OutboxRow[],
): Promise<OutboxRow[]> {
  return takeRoundRobin<OutboxRow>(db, OUTBOX, limit, head);
}

/**
 * The outbox's oldest `limit + 1` changes, for a script that claims in the same round trip as it
 * opens its transaction: pass its rows to claimOutbox as `head`.
 */
export const outboxHead = (limit: number): Statement => queueHead(OUTBOX, limit);

/**
 * claimOutbox's walk as statements of a script (round-robin.ts's walkScript; the rows at
 * WALK_ROWS among them), for a caller that knows a backlog waits: reading the head would only
 * show it more than `limit` rows long, and they would be dropped for the walk's.
 */
export const outboxWalk = (db: Kysely<Database> | Transaction<Database>, limit: number): Statement[] =>
  walkScript(db, OUTBOX, limit);

/**
 * Deletes claimed rows, in the same transaction that recorded their events: exactly once. A
 * script's statement; none for no rows.
 */
export function deleteOutbox(ids: readonly number[]): Statement[] {
  if (ids.length === 0) return [];
  return [CompiledQuery.raw('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [ids])];
}
