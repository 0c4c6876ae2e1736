import { sql, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * Advisory lock keys (pg_advisory_xact_lock). RECORD serializes every writer of the events table
 * (recorder batches, group emission, partition upkeep) across replicas; PUBLISH elects the one
 * replica that publishes, so messages leave in seq order. Transaction-level: a crashed holder
 * releases them with its connection.
 */
const RECORD_LOCK = 7_263_101;
const PUBLISH_LOCK = 7_263_102;

/** Waits for RECORD_LOCK, held until `trx` ends: every writer of the events table takes it first. */
export async function takeRecordLock(trx: Transaction<Database>): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${RECORD_LOCK})`.execute(trx);
}

/** Tries PUBLISH_LOCK without waiting; true when `trx` holds it now, and so is the one publisher. */
export async function tryPublishLock(trx: Transaction<Database>): Promise<boolean> {
  const lock = await sql<{
    ok: boolean;
  }>`SELECT pg_try_advisory_xact_lock(${PUBLISH_LOCK}) AS ok`.execute(trx);
  return lock.rows[0]!.ok;
}
