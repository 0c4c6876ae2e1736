import { sql, type Kysely } from 'kysely';

// The tables the host application writes (decisions.md D8), documented in docs/schema.md.
// CHECK constraints make the invalid states of interface.md 2.1 unrepresentable, so the API
// can map rows to objects without second-guessing them.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE trips (
      id text PRIMARY KEY DEFAULT gen_id('trp'),
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      -- A template is not a trip: invisible through the API and silent in events (D5).
      is_template boolean NOT NULL DEFAULT false,
      title text NOT NULL CHECK (length(title) BETWEEN 1 AND 500),
      status text NOT NULL DEFAULT 'proposal'
        CHECK (status IN ('proposal', 'planning', 'confirmed', 'active', 'completed', 'declined', 'cancelled')),
      region text,
      base_camp text,
      -- dates.mode is derived: 'fixed' exactly when start_date is set.
      start_date date,
      end_date date,
      num_days integer NOT NULL CHECK (num_days >= 1),
      golfers integer NOT NULL DEFAULT 0 CHECK (golfers >= 0),
      client_page_published boolean NOT NULL DEFAULT false,
      client_page_url text,
      client_page_headline text,
      client_page_message text,
      accepted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (agency_id, id),
      CONSTRAINT trips_end_date_needs_start_date CHECK (end_date IS NULL OR start_date IS NOT NULL),
      CONSTRAINT trips_end_date_not_before_start CHECK (end_date IS NULL OR end_date >= start_date),
      CONSTRAINT trips_num_days_matches_dates CHECK (end_date IS NULL OR num_days = end_date - start_date + 1),
      CONSTRAINT trips_url_exactly_when_published CHECK (client_page_published = (client_page_url IS NOT NULL)),
      CONSTRAINT trips_url_is_https CHECK (client_page_url IS NULL OR client_page_url ~ '^https://')
    );
    CREATE INDEX trips_sync ON trips (agency_id, updated_at, id) WHERE NOT is_template;

    -- One itinerary per trip at most; its presence is what makes travelers.non_golfers a number.
    CREATE TABLE itineraries (
      id text PRIMARY KEY DEFAULT gen_id('itn'),
      trip_id text NOT NULL UNIQUE REFERENCES trips (id) ON DELETE CASCADE,
      non_golfers integer NOT NULL DEFAULT 0 CHECK (non_golfers >= 0),
      summary text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE trip_options (
      id text PRIMARY KEY DEFAULT gen_id('opt'),
      trip_id text NOT NULL REFERENCES trips (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
      description text,
      price_amount integer CHECK (price_amount >= 0),
      position integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX trip_options_trip ON trip_options (trip_id);

    CREATE TABLE payments (
      id text PRIMARY KEY DEFAULT gen_id('pay'),
      agency_id text NOT NULL,
      trip_id text NOT NULL,
      description text NOT NULL CHECK (length(description) BETWEEN 1 AND 500),
      amount integer NOT NULL CHECK (amount > 0),
      currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
      due_date date,
      -- 'draft' is still being prepared and invisible to the client, the API and events (D5).
      visibility text NOT NULL DEFAULT 'draft' CHECK (visibility IN ('draft', 'shown')),
      amount_paid integer NOT NULL DEFAULT 0 CHECK (amount_paid >= 0 AND amount_paid <= amount),
      paid_at timestamptz,
      cancelled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      -- The same agency as its trip, enforced rather than trusted.
      FOREIGN KEY (agency_id, trip_id) REFERENCES trips (agency_id, id) ON DELETE CASCADE,
      CONSTRAINT payments_paid_at_exactly_when_paid_in_full CHECK ((paid_at IS NOT NULL) = (amount_paid = amount))
    );
    CREATE INDEX payments_sync ON payments (agency_id, updated_at, id);
    CREATE INDEX payments_trip ON payments (trip_id);

    CREATE TABLE contacts (
      id text PRIMARY KEY DEFAULT gen_id('con'),
      agency_id text NOT NULL REFERENCES agencies (id) ON DELETE CASCADE,
      first_name text NOT NULL CHECK (length(first_name) BETWEEN 1 AND 200),
      last_name text NOT NULL CHECK (length(last_name) BETWEEN 1 AND 200),
      email text CHECK (email ~ '^[^@\\s]+@[^@\\s]+$'),
      phone text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (agency_id, id)
    );
    CREATE INDEX contacts_sync ON contacts (agency_id, updated_at, id);

    CREATE TABLE trip_contacts (
      agency_id text NOT NULL,
      trip_id text NOT NULL,
      contact_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (trip_id, contact_id),
      FOREIGN KEY (agency_id, trip_id) REFERENCES trips (agency_id, id) ON DELETE CASCADE,
      FOREIGN KEY (agency_id, contact_id) REFERENCES contacts (agency_id, id) ON DELETE CASCADE
    );
    CREATE INDEX trip_contacts_contact ON trip_contacts (contact_id);

    CREATE TRIGGER trips_updated_at BEFORE INSERT OR UPDATE ON trips FOR EACH ROW EXECUTE FUNCTION set_updated_at();
    CREATE TRIGGER itineraries_updated_at BEFORE INSERT OR UPDATE ON itineraries FOR EACH ROW EXECUTE FUNCTION set_updated_at();
    CREATE TRIGGER trip_options_updated_at BEFORE INSERT OR UPDATE ON trip_options FOR EACH ROW EXECUTE FUNCTION set_updated_at();
    CREATE TRIGGER payments_updated_at BEFORE INSERT OR UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION set_updated_at();
    CREATE TRIGGER contacts_updated_at BEFORE INSERT OR UPDATE ON contacts FOR EACH ROW EXECUTE FUNCTION set_updated_at();

    -- An itinerary or option is part of its trip, and a trip link part of its contact: touching the
    -- parent's updated_at keeps list sync honest (the parent's object changed) without making an
    -- event by itself (a change of updated_at alone makes none, D6).
    CREATE FUNCTION touch_parent_trip() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        UPDATE trips SET updated_at = now() WHERE id = OLD.trip_id;
      END IF;
      IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.trip_id <> OLD.trip_id) THEN
        UPDATE trips SET updated_at = now() WHERE id = NEW.trip_id;
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER itineraries_touch_trip AFTER INSERT OR UPDATE OR DELETE ON itineraries
      FOR EACH ROW EXECUTE FUNCTION touch_parent_trip();
    CREATE TRIGGER trip_options_touch_trip AFTER INSERT OR UPDATE OR DELETE ON trip_options
      FOR EACH ROW EXECUTE FUNCTION touch_parent_trip();

    CREATE FUNCTION touch_linked_contact() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        UPDATE contacts SET updated_at = now() WHERE id = OLD.contact_id;
      END IF;
      IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.contact_id <> OLD.contact_id) THEN
        UPDATE contacts SET updated_at = now() WHERE id = NEW.contact_id;
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER trip_contacts_touch_contact AFTER INSERT OR UPDATE OR DELETE ON trip_contacts
      FOR EACH ROW EXECUTE FUNCTION touch_linked_contact();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TABLE trip_contacts, contacts, payments, trip_options, itineraries, trips;
    DROP FUNCTION touch_parent_trip(), touch_linked_contact();
  `.execute(db);
}
