import { sql, type Kysely } from 'kysely';

// A trip turned into a template (or back) changes what the API shows of its payments (hidden or
// shown again) and of its contacts (trip_ids loses or gains it), though no payment or link row
// changes. Touching their updated_at keeps `updated_since` sync of /payments and /contacts honest,
// as the child triggers of 0002 do for trips. It makes no event: a change of updated_at alone
// makes none (D6), and the flip's own event is trip.created or trip.deleted (D5). Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE FUNCTION touch_parts_of_flipped_trip() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE payments SET updated_at = now() WHERE trip_id = NEW.id;
      UPDATE contacts SET updated_at = now()
        WHERE id IN (SELECT contact_id FROM trip_contacts WHERE trip_id = NEW.id);
      RETURN NULL;
    END $$;
    CREATE TRIGGER trips_template_flip_touches_parts AFTER UPDATE OF is_template ON trips
      FOR EACH ROW WHEN (OLD.is_template IS DISTINCT FROM NEW.is_template)
      EXECUTE FUNCTION touch_parts_of_flipped_trip();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TRIGGER trips_template_flip_touches_parts ON trips;
    DROP FUNCTION touch_parts_of_flipped_trip();
  `.execute(db);
}
