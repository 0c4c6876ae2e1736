import { sql, type Kysely } from 'kysely';

// Capture (decisions.md D8): every committed change to the write contract lands in `outbox` in the
// writer's own transaction, whichever client made it. A rolled-back write leaves nothing. The
// recorder (services/recorder) turns outbox rows into events; docs/events.md has the whole design.
//
// Triggers capture facts only (old and new values of the columns that matter, and whether the
// parent trip is a template); which event a change makes is decided in one place, the recorder's
// catalogue, so the rules of interface.md section 6 live in code that reads like that table.

/**
 * The capture trigger's function as this migration made it; 0009 replaces it, and its `down` puts
 * this one back. `OR REPLACE` so that it can.
 */
export const captureChange = sql`
    -- One function for every captured table. The parent trip's template flag is looked up at write
    -- time, because a template's parts make no events (D5) and the recorder cannot tell later.
    CREATE OR REPLACE FUNCTION capture_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      old_row jsonb;
      new_row jsonb;
      agency text;
      parent_template boolean;
    BEGIN
      IF TG_OP <> 'INSERT' THEN old_row := to_jsonb(OLD) - 'created_at' - 'updated_at'; END IF;
      IF TG_OP <> 'DELETE' THEN new_row := to_jsonb(NEW) - 'created_at' - 'updated_at'; END IF;
      -- A change of updated_at alone (a child touching its trip, a link touching its contact, a
      -- no-op UPDATE) is no change (D6).
      IF TG_OP = 'UPDATE' AND old_row = new_row THEN RETURN NULL; END IF;

      IF TG_TABLE_NAME IN ('itineraries', 'trip_options', 'payments', 'trip_contacts') THEN
        SELECT t.agency_id, t.is_template INTO agency, parent_template
          FROM trips t WHERE t.id = coalesce(new_row ->> 'trip_id', old_row ->> 'trip_id');
        -- An itinerary or option deleted because its trip is being deleted: the trip's own
        -- deletion (trip.deleted) says it all.
        IF NOT FOUND AND TG_TABLE_NAME IN ('itineraries', 'trip_options') THEN RETURN NULL; END IF;
        -- Likewise a link removed because its contact is being deleted: contact.deleted says it.
        IF TG_TABLE_NAME = 'trip_contacts' AND TG_OP = 'DELETE' THEN
          IF NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = old_row ->> 'contact_id') THEN RETURN NULL; END IF;
        END IF;
        IF old_row IS NOT NULL THEN old_row := old_row || jsonb_build_object('trip_is_template', parent_template); END IF;
        IF new_row IS NOT NULL THEN new_row := new_row || jsonb_build_object('trip_is_template', parent_template); END IF;
      END IF;
      agency := coalesce(new_row ->> 'agency_id', old_row ->> 'agency_id', agency);

      INSERT INTO outbox (agency_id, source, op, old, new)
        VALUES (agency, TG_TABLE_NAME, lower(TG_OP), old_row, new_row);
      RETURN NULL;
    END $$;
`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE outbox (
      -- Changes of one row are serialized by its row lock, so for each object the id order is
      -- the commit order; the recorder relies on nothing more than that.
      id bigserial PRIMARY KEY,
      agency_id text NOT NULL,
      source text NOT NULL CHECK (source IN ('trips', 'itineraries', 'trip_options', 'payments', 'contacts', 'trip_contacts')),
      op text NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
      -- The changed row as JSON, without id-less bookkeeping (created_at, updated_at); null for
      -- the side that does not exist (old of an insert, new of a delete).
      old jsonb,
      new jsonb,
      -- When the change was made (not when its transaction started): grouping measures quiet
      -- periods from it, so a recorder that lags behind still groups by the writers' clock.
      created_at timestamptz NOT NULL DEFAULT clock_timestamp()
    );

    ${captureChange}

    CREATE TRIGGER trips_capture AFTER INSERT OR UPDATE OR DELETE ON trips
      FOR EACH ROW EXECUTE FUNCTION capture_change();
    CREATE TRIGGER itineraries_capture AFTER INSERT OR UPDATE OR DELETE ON itineraries
      FOR EACH ROW EXECUTE FUNCTION capture_change();
    CREATE TRIGGER trip_options_capture AFTER INSERT OR UPDATE OR DELETE ON trip_options
      FOR EACH ROW EXECUTE FUNCTION capture_change();
    CREATE TRIGGER payments_capture AFTER INSERT OR UPDATE OR DELETE ON payments
      FOR EACH ROW EXECUTE FUNCTION capture_change();
    CREATE TRIGGER contacts_capture AFTER INSERT OR UPDATE OR DELETE ON contacts
      FOR EACH ROW EXECUTE FUNCTION capture_change();
    CREATE TRIGGER trip_contacts_capture AFTER INSERT OR UPDATE OR DELETE ON trip_contacts
      FOR EACH ROW EXECUTE FUNCTION capture_change();

    -- The event record. seq is the reading order of GET /events: values are taken only inside the
    -- recorder's batch lock, and each batch commits before the next takes any, so events become
    -- visible in seq order and a reader asking for seq > cursor never skips one (D6).
    CREATE SEQUENCE events_seq AS bigint;
    CREATE TABLE events (
      seq bigint NOT NULL,
      id text NOT NULL DEFAULT gen_id('evt'),
      agency_id text NOT NULL,
      type text NOT NULL,
      object_type text NOT NULL CHECK (object_type IN ('trip', 'payment', 'contact')),
      object_id text NOT NULL,
      data jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL,
      PRIMARY KEY (seq, created_at)
    ) PARTITION BY RANGE (created_at);
    -- Partitions of one UTC day each: retention drops whole partitions, at a cost that does not
    -- grow with the table. The recorder creates them ahead of time (repositories/events.ts).
    CREATE INDEX events_agency_seq ON events (agency_id, seq);

    -- Events recorded but not yet confirmed by the broker; the publisher deletes a row once
    -- RabbitMQ confirmed its message. A crash in between republishes it (same event id).
    CREATE TABLE events_unpublished (
      seq bigint PRIMARY KEY,
      id text NOT NULL,
      agency_id text NOT NULL,
      type text NOT NULL,
      object_type text NOT NULL,
      object_id text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL
    );

    -- Pending *.updated events (interface.md 6.1), one per (object type, object id). Kept in
    -- Postgres so a restart or another replica carries on with the same groups.
    CREATE TABLE event_groups (
      object_type text NOT NULL,
      object_id text NOT NULL,
      agency_id text NOT NULL,
      first_change_at timestamptz NOT NULL,
      last_change_at timestamptz NOT NULL,
      -- least(last change + EVENT_GROUP_QUIET, first change + EVENT_GROUP_MAX), kept by the recorder.
      due_at timestamptz NOT NULL,
      PRIMARY KEY (object_type, object_id)
    );
    CREATE INDEX event_groups_due ON event_groups (due_at);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TRIGGER trips_capture ON trips;
    DROP TRIGGER itineraries_capture ON itineraries;
    DROP TRIGGER trip_options_capture ON trip_options;
    DROP TRIGGER payments_capture ON payments;
    DROP TRIGGER contacts_capture ON contacts;
    DROP TRIGGER trip_contacts_capture ON trip_contacts;
    DROP FUNCTION capture_change();
    DROP TABLE outbox, events, events_unpublished, event_groups;
    DROP SEQUENCE events_seq;
  `.execute(db);
}
