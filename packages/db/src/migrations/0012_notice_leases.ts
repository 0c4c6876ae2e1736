import { sql, type Kysely } from 'kysely';

// The mailer claimed owed e-mails FOR UPDATE and talked SMTP inside that transaction. A hanging
// mail server then kept a transaction and a pool connection open for minutes; the row locks gave
// it a transaction id, so list sync (repositories/sync.ts) froze for every agency meanwhile; and a
// stop that rolled the transaction back sent every e-mail the server had already accepted again.
//
// A claim is now a lease committed at once: claimed_until is when another mailer may take the
// notice (it died mid-send, say). The mailer sends with no transaction open and records the
// outcome in one statement that clears the lease. Null: not claimed, or the claim has ended.
// Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE owner_notices ADD COLUMN claimed_until timestamptz`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE owner_notices DROP COLUMN claimed_until`.execute(db);
}
