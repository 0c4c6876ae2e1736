import { sql, type Kysely } from 'kysely';

// The owners' audit trail (issue 5; decisions.md D8): every action of the settings module (the
// settings page and tripctl) writes one row in the same transaction as its change, so a change is
// never without its record and a refused or failed action leaves none. Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE audit_log (
      id bigserial PRIMARY KEY,
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      -- Who: an owner (user id, kept even if the user is later deleted, with the e-mail they had)
      -- or the platform team through tripctl ('platform', no user).
      actor_user_id text,
      actor text NOT NULL CHECK (length(actor) BETWEEN 1 AND 320),
      -- What, on which object: 'webhook.created', 'api_key.scopes_added', ...
      action text NOT NULL CHECK (action ~ '^[a-z_]+\\.[a-z_]+$'),
      object_type text NOT NULL CHECK (object_type IN ('api_key', 'webhook', 'user')),
      object_id text NOT NULL,
      -- A small summary of the change. Never a secret, a key or a password.
      details jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX audit_log_agency ON audit_log (agency_id, created_at DESC, id DESC);
    CREATE INDEX audit_log_object ON audit_log (object_id);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE audit_log`.execute(db);
}
