import { sql, type Kysely } from 'kysely';

// A new key or secret is shown once on a page of its own that the owner reaches by a redirect
// (post/redirect/get, issue 26), so that reloading it creates nothing. Between the post and that
// page it waits here, sealed (AES-256-GCM) with a key that only the owner's browser holds, in a
// cookie scoped to that one page: a copy of this table alone reveals no key or secret, and the
// first read deletes the row, so a reload, or anyone later, finds nothing. A row outlives neither
// its session nor a few minutes. Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE shown_once (
      id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{16,64}$'),
      session_token_hash text NOT NULL REFERENCES owner_sessions (token_hash) ON DELETE CASCADE,
      -- What the page says around the value (kind, object id, non-secret facts).
      about jsonb NOT NULL,
      -- iv.ciphertext.tag, base64url.
      sealed text NOT NULL CHECK (octet_length(sealed) <= 1024),
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX shown_once_session ON shown_once (session_token_hash);
    CREATE INDEX shown_once_created ON shown_once (created_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE shown_once`.execute(db);
}
