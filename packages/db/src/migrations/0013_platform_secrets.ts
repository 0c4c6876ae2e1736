import { sql, type Kysely } from 'kysely';

// Secrets of the platform itself, made here so that every replica of a service reads the same one
// without another value to deploy and keep in step. The first: the key that seals GET /events
// cursors (services/api/src/routes/event-cursors.ts), 32 bytes from two gen_random_uuid(), which
// Postgres draws from its strong random source (244 random bits; the version bits are fixed).
// Only the migrating role and the services' role read this table; it is never served. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE platform_secrets (
      name text PRIMARY KEY,
      secret bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )
  `.execute(db);
  await sql`
    INSERT INTO platform_secrets (name, secret)
    VALUES ('event_cursor_key',
            decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE platform_secrets`.execute(db);
}
