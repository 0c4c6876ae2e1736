import { sql, type Kysely } from 'kysely';

// The receiver sets the pace (D10, issue 41).
//
// `webhooks.rate_limit`: the owner's limit, at most N deliveries a second (1–1,000), null for none.
// Dispatchers read it with the webhook, so it joins the columns whose change is told at once
// (migration 0016's trigger, made again here with it).
//
// `webhook_pace`, a row per webhook that has been paced, apart from `webhooks` because its writes
// are frequent and must not take the webhook row's lock, which every batch of attempts takes:
// - `paused_until`: a receiver answered 429 or 503, and none of the webhook's deliveries is
//   attempted before then, by any dispatcher; `paused_at`: since when. `pause_status` and
//   `pause_retry_after_ms` say why
//   (the Retry-After it gave; null: none, and the dispatcher chose the pause). A change of the
//   pause is told like a change of the webhook, with how long it lasts, so every dispatcher holds
//   off at once, even with attempts of the webhook already under way.
// - `next_send_at`: the owner's rate limit, shared by every dispatcher as a virtual schedule (GCRA):
//   a dispatcher reserves the next few send times at 1/N s apart and moves it past them. Its
//   changes are told to nobody.
//
// `webhook_attempts.next_attempt_at`: when the delivery of a failed attempt is due again, as the
// dispatcher scheduled it (null: delivered, given up, or made before this column): the settings
// page and tripctl read it rather than work it out from their own settings. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    ALTER TABLE webhooks ADD COLUMN rate_limit int CHECK (rate_limit BETWEEN 1 AND 1000);
    ALTER TABLE webhook_attempts ADD COLUMN next_attempt_at timestamptz;

    CREATE TABLE webhook_pace (
      webhook_id text PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
      paused_until timestamptz,
      paused_at timestamptz,
      pause_status int,
      pause_retry_after_ms int,
      next_send_at timestamptz
    );

    DROP TRIGGER webhooks_delivery_targets_updated ON webhooks;
    CREATE TRIGGER webhooks_delivery_targets_updated
      AFTER UPDATE OF id, agency_id, url, event_types, disabled_at, epoch, rate_limit ON webhooks
      FOR EACH ROW
      WHEN ((OLD.id, OLD.agency_id, OLD.url, OLD.event_types, OLD.disabled_at, OLD.epoch, OLD.rate_limit)
            IS DISTINCT FROM (NEW.id, NEW.agency_id, NEW.url, NEW.event_types, NEW.disabled_at, NEW.epoch,
                              NEW.rate_limit))
      EXECUTE FUNCTION webhooks_delivery_targets_changed();

    CREATE FUNCTION webhook_pace_paused() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('delivery_targets_changed', json_build_object(
        'agency', (SELECT agency_id FROM webhooks WHERE id = NEW.webhook_id),
        'webhook', NEW.webhook_id,
        'paused_for_ms', extract(epoch FROM NEW.paused_until - now()) * 1000)::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER webhook_pace_paused_inserted AFTER INSERT ON webhook_pace
      FOR EACH ROW WHEN (NEW.paused_until IS NOT NULL) EXECUTE FUNCTION webhook_pace_paused();
    CREATE TRIGGER webhook_pace_paused_updated AFTER UPDATE OF paused_until ON webhook_pace
      FOR EACH ROW WHEN (OLD.paused_until IS DISTINCT FROM NEW.paused_until)
      EXECUTE FUNCTION webhook_pace_paused();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TABLE webhook_pace;
    DROP FUNCTION webhook_pace_paused();
    DROP TRIGGER webhooks_delivery_targets_updated ON webhooks;
    CREATE TRIGGER webhooks_delivery_targets_updated
      AFTER UPDATE OF id, agency_id, url, event_types, disabled_at, epoch ON webhooks
      FOR EACH ROW
      WHEN ((OLD.id, OLD.agency_id, OLD.url, OLD.event_types, OLD.disabled_at, OLD.epoch)
            IS DISTINCT FROM (NEW.id, NEW.agency_id, NEW.url, NEW.event_types, NEW.disabled_at, NEW.epoch))
      EXECUTE FUNCTION webhooks_delivery_targets_changed();
    ALTER TABLE webhook_attempts DROP COLUMN next_attempt_at;
    ALTER TABLE webhooks DROP COLUMN rate_limit;
  `.execute(db);
}
