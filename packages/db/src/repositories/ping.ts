import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * One round trip to Postgres, which rejects when it cannot be made: the services' readiness
 * probes, and the dispatcher's test of whether a failure is a Postgres outage.
 */
export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`SELECT 1`.execute(db);
}
