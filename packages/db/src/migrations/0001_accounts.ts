import { sql, type Kysely } from 'kysely';

// Agencies, their people and their API keys. Frozen: later changes go in a new migration.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    -- Opaque ids with a type prefix (decisions.md D4): 16 base62 characters from a v4 UUID.
    CREATE FUNCTION gen_id(prefix text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
      bytes bytea := uuid_send(gen_random_uuid());
      result text := prefix || '_';
    BEGIN
      FOR i IN 0..15 LOOP
        result := result || substr(alphabet, (get_byte(bytes, i) % 62) + 1, 1);
      END LOOP;
      RETURN result;
    END $$;

    -- updated_at is the sync position of GET /trips?updated_since (D4), so the database owns it:
    -- it is always the writing transaction's start time, whatever the writer sent. The list
    -- endpoints rely on that to never skip a row committed late (see repositories/sync.ts).
    CREATE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.updated_at := now();
      RETURN NEW;
    END $$;

    CREATE TABLE agencies (
      id text PRIMARY KEY DEFAULT gen_id('agy'),
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      api_enabled boolean NOT NULL DEFAULT false,
      subscription_status text NOT NULL DEFAULT 'trialing'
        CHECK (subscription_status IN ('trialing', 'active', 'expired')),
      -- A trial with an end date lapses by itself; NULL means it runs until changed.
      trial_ends_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE users (
      id text PRIMARY KEY DEFAULT gen_id('usr'),
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      email text NOT NULL CHECK (email ~ '^[^@\\s]+@[^@\\s]+$'),
      role text NOT NULL CHECK (role IN ('owner', 'planner')),
      password_hash text,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX users_email ON users (lower(email));
    CREATE INDEX users_agency ON users (agency_id);

    CREATE TABLE api_keys (
      id text PRIMARY KEY DEFAULT gen_id('key'),
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      name text,
      -- Only a SHA-256 of the key is kept (D2); the prefix lets an owner recognise a key.
      prefix text NOT NULL,
      hash bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
      scopes text[] NOT NULL DEFAULT '{}'
        CHECK (scopes <@ ARRAY['trips:read', 'payments:read', 'contacts:read', 'events:read']),
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    );
    CREATE INDEX api_keys_agency ON api_keys (agency_id);

    -- API replicas cache keys and agencies for speed; any change to either tells every replica
    -- to drop its cache at once, so a revoked key or a lapsed subscription stops working now,
    -- whichever client (tripctl, the settings page, plain SQL) made the change.
    CREATE FUNCTION notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('auth_changed', TG_TABLE_NAME);
      RETURN NULL;
    END $$;
    CREATE TRIGGER agencies_auth_changed AFTER UPDATE OR DELETE ON agencies
      FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
    CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OR DELETE ON api_keys
      FOR EACH STATEMENT EXECUTE FUNCTION notify_auth_changed();
    CREATE TRIGGER agencies_updated_at BEFORE UPDATE ON agencies
      FOR EACH ROW EXECUTE FUNCTION set_updated_at();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TABLE api_keys, users, agencies;
    DROP FUNCTION notify_auth_changed(), set_updated_at(), gen_id(text);
  `.execute(db);
}
