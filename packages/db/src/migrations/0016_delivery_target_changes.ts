import { sql, type Kysely } from 'kysely';

// Dispatchers keep each agency's delivery targets (its active webhooks with their signing secrets,
// repositories/webhooks.ts `activeDeliveryTargets`) and each webhook's in memory, instead of reading
// them for every batch of deliveries. Every change of a row those reads see now tells them at once,
// whoever makes it (settings page, tripctl, the switch-off policy, plain SQL): a NOTIFY on
// `delivery_targets_changed`, sent when the change commits, names the agency and the webhook, and
// each dispatcher drops what it holds of them (services/dispatcher/src/targets-cache.ts).
//
// Only the columns the reads select count, through `UPDATE OF`: the attempts' streak updates
// (failing_since, last_success_at, ...), which run on every delivery batch, fire nothing. A secret
// names its webhook's agency as the webhook row says in that transaction; one whose webhook is
// deleted in the same transaction (a cascade) names no agency, as the webhook's own delete names
// it. TRUNCATE names everything ('*'). Identical payloads in one transaction arrive once
// (Postgres folds them), so a statement touching many secrets of one webhook sends one. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE FUNCTION notify_delivery_target_changed(agency text, webhook text) RETURNS void
    LANGUAGE sql AS $$
      SELECT pg_notify('delivery_targets_changed', json_build_object('agency', agency, 'webhook', webhook)::text)
    $$;

    CREATE FUNCTION webhooks_delivery_targets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN PERFORM notify_delivery_target_changed(OLD.agency_id, OLD.id); END IF;
      IF TG_OP <> 'DELETE' THEN PERFORM notify_delivery_target_changed(NEW.agency_id, NEW.id); END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER webhooks_delivery_targets_added_removed AFTER INSERT OR DELETE ON webhooks
      FOR EACH ROW EXECUTE FUNCTION webhooks_delivery_targets_changed();
    CREATE TRIGGER webhooks_delivery_targets_updated
      AFTER UPDATE OF id, agency_id, url, event_types, disabled_at, epoch ON webhooks
      FOR EACH ROW
      WHEN ((OLD.id, OLD.agency_id, OLD.url, OLD.event_types, OLD.disabled_at, OLD.epoch)
            IS DISTINCT FROM (NEW.id, NEW.agency_id, NEW.url, NEW.event_types, NEW.disabled_at, NEW.epoch))
      EXECUTE FUNCTION webhooks_delivery_targets_changed();

    CREATE FUNCTION webhook_secrets_delivery_targets_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        PERFORM notify_delivery_target_changed(
          (SELECT agency_id FROM webhooks WHERE id = OLD.webhook_id), OLD.webhook_id);
      END IF;
      IF TG_OP <> 'DELETE' THEN
        PERFORM notify_delivery_target_changed(
          (SELECT agency_id FROM webhooks WHERE id = NEW.webhook_id), NEW.webhook_id);
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER webhook_secrets_delivery_targets_changed AFTER INSERT OR UPDATE OR DELETE ON webhook_secrets
      FOR EACH ROW EXECUTE FUNCTION webhook_secrets_delivery_targets_changed();

    CREATE FUNCTION delivery_targets_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('delivery_targets_changed', '*');
      RETURN NULL;
    END $$;
    CREATE TRIGGER webhooks_delivery_targets_truncated AFTER TRUNCATE ON webhooks
      FOR EACH STATEMENT EXECUTE FUNCTION delivery_targets_truncated();
    CREATE TRIGGER webhook_secrets_delivery_targets_truncated AFTER TRUNCATE ON webhook_secrets
      FOR EACH STATEMENT EXECUTE FUNCTION delivery_targets_truncated();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TRIGGER webhooks_delivery_targets_added_removed ON webhooks;
    DROP TRIGGER webhooks_delivery_targets_updated ON webhooks;
    DROP TRIGGER webhooks_delivery_targets_truncated ON webhooks;
    DROP TRIGGER webhook_secrets_delivery_targets_changed ON webhook_secrets;
    DROP TRIGGER webhook_secrets_delivery_targets_truncated ON webhook_secrets;
    DROP FUNCTION webhooks_delivery_targets_changed(), webhook_secrets_delivery_targets_changed(),
                  delivery_targets_truncated(), notify_delivery_target_changed(text, text);
  `.execute(db);
}
