import { sql, type Kysely } from 'kysely';

// Webhooks (interface.md 2.4, 3.3; decisions.md D7): the agency's endpoints, their signing
// secrets, every delivery attempt, and the e-mails owners are owed. services/dispatcher writes the
// delivery state; owners (settings page, tripctl) write the configuration. Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE webhooks (
      id text PRIMARY KEY DEFAULT gen_id('whk'),
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      url text NOT NULL CHECK (url ~ '^https://[^/?#]+' AND length(url) <= 2048),
      event_types text[] NOT NULL CHECK (
        cardinality(event_types) > 0 AND event_types <@ ARRAY[
          'trip.created', 'trip.status_changed', 'trip.accepted', 'trip.published', 'trip.unpublished',
          'trip.updated', 'trip.deleted', 'payment.created', 'payment.paid', 'payment.updated',
          'payment.deleted', 'contact.created', 'contact.updated', 'contact.deleted']),
      description text CHECK (length(description) <= 500),
      -- Switched off: nothing is delivered. 'failing' by the dispatcher after WEBHOOK_FAILURE_WINDOW
      -- without a 2xx (spec 3.3), 'owner' by an owner's action.
      disabled_at timestamptz,
      disabled_reason text CHECK (disabled_reason IN ('failing', 'owner')),
      -- The failure streak: the first failed attempt since the last 2xx (NULL when the last answer
      -- was a 2xx). Switch-off and the warning e-mail are measured from it.
      failing_since timestamptz,
      last_failure_at timestamptz,
      last_error text,
      last_success_at timestamptz,
      -- The warning e-mail of the current streak went out; cleared with the streak.
      warned_at timestamptz,
      -- Bumped at every switch-off. A queued delivery carries the epoch it was made in and is
      -- dropped when that is no longer current, which is how pending retries are dropped (D7)
      -- without searching the delay queues.
      epoch integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL))
    );
    CREATE INDEX webhooks_agency ON webhooks (agency_id);
    -- The switch-off sweep reads only the webhooks in a failure streak.
    CREATE INDEX webhooks_failing ON webhooks (failing_since) WHERE failing_since IS NOT NULL AND disabled_at IS NULL;
    CREATE TRIGGER webhooks_updated_at BEFORE UPDATE ON webhooks
      FOR EACH ROW EXECUTE FUNCTION set_updated_at();

    -- Signing secrets (D7). Kept in plaintext because signing needs the secret itself (HMAC); they
    -- never leave the database except to sign and, once, to the owner who created them. During a
    -- rotation the old secret gets an expires_at and both sign until then.
    CREATE TABLE webhook_secrets (
      id text PRIMARY KEY DEFAULT gen_id('whs'),
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      secret text NOT NULL CHECK (secret ~ '^whsec_[A-Za-z0-9_-]{43}$'),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz
    );
    CREATE INDEX webhook_secrets_webhook ON webhook_secrets (webhook_id);

    -- Every delivery attempt, for owners and for debugging; pruned after EVENT_RETENTION.
    CREATE TABLE webhook_attempts (
      id bigserial PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event_id text NOT NULL,
      event_type text NOT NULL,
      attempt integer NOT NULL CHECK (attempt >= 1),
      attempted_at timestamptz NOT NULL,
      duration_ms integer NOT NULL CHECK (duration_ms >= 0),
      -- The HTTP status when an answer came; error names the failure class otherwise (and for a
      -- non-2xx answer: 'http_status', 'redirect').
      status_code integer,
      error text,
      -- The first 1 KiB of the answer, as text.
      response_body text CHECK (octet_length(response_body) <= 1024),
      succeeded boolean NOT NULL,
      CHECK (succeeded = (error IS NULL))
    );
    CREATE INDEX webhook_attempts_webhook ON webhook_attempts (webhook_id, attempted_at DESC);
    CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id);
    CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at);

    -- E-mails owed to owners, written in the same transaction as the state change that owes them
    -- (a webhook warned about or switched off), then sent by the dispatcher's mailer: a crash
    -- between the two never loses one. One row per recipient.
    CREATE TABLE owner_notices (
      id bigserial PRIMARY KEY,
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      webhook_id text REFERENCES webhooks (id) ON DELETE SET NULL,
      kind text NOT NULL CHECK (kind IN ('webhook_failing', 'webhook_switched_off')),
      recipient text NOT NULL,
      subject text NOT NULL,
      body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      sent_at timestamptz,
      send_attempts integer NOT NULL DEFAULT 0,
      last_error text
    );
    CREATE INDEX owner_notices_unsent ON owner_notices (id) WHERE sent_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE owner_notices, webhook_attempts, webhook_secrets, webhooks`.execute(db);
}
