import { sql, type Kysely } from 'kysely';

// The settings page's sign-in (issue 5). Sessions live in Postgres so every API replica knows
// them; only a SHA-256 of the cookie's token is stored, so a leaked table signs nobody in. The
// failure counters rate-limit sign-in per e-mail and per client address across replicas. Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE owner_sessions (
      token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      -- The synchronizer token every form of the session carries (CSRF).
      csrf_token text NOT NULL CHECK (length(csrf_token) >= 32),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL CHECK (expires_at > created_at)
    );
    CREATE INDEX owner_sessions_user ON owner_sessions (user_id);
    CREATE INDEX owner_sessions_expiry ON owner_sessions (expires_at);

    -- Failed sign-ins in the current window, per 'email:<address>' or 'address:<ip>'.
    CREATE UNLOGGED TABLE sign_in_failures (
      key text PRIMARY KEY CHECK (length(key) BETWEEN 1 AND 400),
      failures integer NOT NULL CHECK (failures >= 1),
      window_started_at timestamptz NOT NULL
    );
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE sign_in_failures; DROP TABLE owner_sessions`.execute(db);
}
