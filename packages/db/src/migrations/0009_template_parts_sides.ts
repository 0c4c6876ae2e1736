import { sql, type Kysely } from 'kysely';
import { captureChange } from './0003_event_capture.ts';

// A template's parts make no events (D5), and 0003's capture could not always tell that a part was
// a template's:
// - When a template is deleted, ON DELETE CASCADE deletes its payments and links after the template
//   row is gone, so the lookup of its flag found nothing and they were taken for a deleted trip's:
//   payment.deleted and contact.updated about objects that had always answered 404. The template's
//   id is now remembered, for the rest of the transaction, before its row goes.
// - A part moved between a trip and a template was stamped with the new trip's flag on both sides.
//   Each side is now judged by its own trip, so the trip that lost an option gets trip.updated, a
//   shown payment moved onto a trip is payment.created, and one moved onto a template
//   payment.deleted.
// Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    -- Ids of the templates deleted in this transaction, space-separated, in a transaction-local
    -- setting: it needs no table, and nothing of it outlives the transaction.
    CREATE FUNCTION remember_deleted_template() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM set_config('trips.deleted_templates',
        coalesce(nullif(current_setting('trips.deleted_templates', true), ''), ' ') || OLD.id || ' ', true);
      RETURN OLD;
    END $$;
    CREATE TRIGGER trips_remember_deleted_template BEFORE DELETE ON trips
      FOR EACH ROW WHEN (OLD.is_template) EXECUTE FUNCTION remember_deleted_template();

    CREATE OR REPLACE FUNCTION capture_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      old_row jsonb;
      new_row jsonb;
      agency text;
      old_template boolean;
      new_template boolean;
    BEGIN
      IF TG_OP <> 'INSERT' THEN old_row := to_jsonb(OLD) - 'created_at' - 'updated_at'; END IF;
      IF TG_OP <> 'DELETE' THEN new_row := to_jsonb(NEW) - 'created_at' - 'updated_at'; END IF;
      -- A change of updated_at alone (a child touching its trip, a link touching its contact, a
      -- no-op UPDATE) is no change (D6).
      IF TG_OP = 'UPDATE' AND old_row = new_row THEN RETURN NULL; END IF;

      IF TG_TABLE_NAME IN ('itineraries', 'trip_options', 'payments', 'trip_contacts') THEN
        -- A link removed because its contact is being deleted: contact.deleted says it all.
        IF TG_TABLE_NAME = 'trip_contacts' AND TG_OP = 'DELETE' THEN
          IF NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = old_row ->> 'contact_id') THEN RETURN NULL; END IF;
        END IF;
        IF old_row IS NOT NULL THEN
          SELECT t.agency_id, t.is_template INTO agency, old_template
            FROM trips t WHERE t.id = old_row ->> 'trip_id';
          IF NOT FOUND THEN
            -- The part goes with its trip (ON DELETE CASCADE). An itinerary or option: the trip's
            -- own deletion (trip.deleted) says it all.
            IF TG_TABLE_NAME IN ('itineraries', 'trip_options') THEN RETURN NULL; END IF;
            old_template := position(' ' || (old_row ->> 'trip_id') || ' '
              IN coalesce(current_setting('trips.deleted_templates', true), '')) > 0;
          END IF;
          old_row := old_row || jsonb_build_object('trip_is_template', old_template);
        END IF;
        IF new_row IS NOT NULL THEN
          SELECT t.agency_id, t.is_template INTO agency, new_template
            FROM trips t WHERE t.id = new_row ->> 'trip_id';
          new_row := new_row || jsonb_build_object('trip_is_template', new_template);
        END IF;
      END IF;
      agency := coalesce(new_row ->> 'agency_id', old_row ->> 'agency_id', agency);

      INSERT INTO outbox (agency_id, source, op, old, new)
        VALUES (agency, TG_TABLE_NAME, lower(TG_OP), old_row, new_row);
      RETURN NULL;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TRIGGER trips_remember_deleted_template ON trips;
    DROP FUNCTION remember_deleted_template();

    ${captureChange}
  `.execute(db);
}
