import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The tables that work as queues: every row is inserted, then deleted within moments, so each
 * holds almost no live rows and a steady stream of dead ones. Until a vacuum, each take walks
 * their indexes over every dead entry since the last one (the publisher's round-robin walk over
 * agencies most of all), and autovacuum looks at a database once a minute at best, or never where
 * it is switched off. Each service vacuums the queues it drains (docs/operations.md, "Sizing").
 */
export const RECORDER_QUEUE_TABLES = ['outbox', 'events_unpublished'] as const;
export const DISPATCHER_QUEUE_TABLES = ['held_deliveries'] as const;

type QueueTable = (typeof RECORDER_QUEUE_TABLES)[number] | (typeof DISPATCHER_QUEUE_TABLES)[number];

/**
 * VACUUM of the given queue tables. SKIP_LOCKED: a table another replica (or autovacuum) is
 * vacuuming is skipped rather than waited for. TRUNCATE false: giving back the empty pages at a
 * table's end would take a lock that stops the writers behind it, and the next inserts need those
 * pages again. A role that does not own a table gets a warning from Postgres, not an error.
 */
export async function vacuumQueueTables(db: Kysely<Database>, tables: readonly QueueTable[]): Promise<void> {
  await sql`VACUUM (SKIP_LOCKED, TRUNCATE false) ${sql.join(tables.map((table) => sql.table(table)))}`.execute(
    db,
  );
}
