import { sql, type Kysely } from 'kysely';

// The recorder claims the outbox round-robin across agencies (claimOutbox in
// repositories/outbox.ts): claimed in id order, one agency's bulk import held every other
// agency's changes back until all of its own had been recorded. The fair claim needs each
// agency's oldest changes in id order, and the next agency after one (a loose index scan over
// agency_id), without reading the rest of a long queue: this index gives both. Building it takes a
// lock that holds writers back; the outbox is all but empty while the recorder keeps up, so that
// is a moment. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX outbox_agency_id ON outbox (agency_id, id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX outbox_agency_id`.execute(db);
}
