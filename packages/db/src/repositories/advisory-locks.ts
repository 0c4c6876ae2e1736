import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * Advisory lock keys (pg_advisory_xact_lock). RECORD serializes every writer of the events table
 * (recorder batches, group emission, partition upkeep) across replicas; PUBLISH elects the one
 * replica that publishes, so messages leave in seq order. Transaction-level: a crashed holder
 * releases them with its connection.
 */
const RECORD_LOCK = 7_263_101;
const PUBLISH_LOCK = 7_263_102;

/** Waits for RECORD_LOCK, held until the transaction ends: every writer of the events table takes it first. */
export const recordLock = CompiledQuery.raw(`SELECT pg_advisory_xact_lock(${RECORD_LOCK})`);

/** Tries PUBLISH_LOCK without waiting; its one row's `ok` is true when the transaction holds it now. */
export const tryPublishLock = CompiledQuery.raw(`SELECT pg_try_advisory_xact_lock(${PUBLISH_LOCK}) AS ok`);

/** recordLock on its own, for a transaction that is not a script. */
export async function takeRecordLock(trx: Transaction<Database> | Kysely<Database>): Promise<void> {
  await trx.executeQuery(recordLock);
}
