import { sql, type Kysely } from 'kysely';

// When an event's change was captured in its writer's transaction, carried past the recorder for
// the commit → publish and commit → delivery histograms (docs/design/metrics.md, "Where each lag starts").
// Two places read an event's delivery back from Postgres rather than from a message: the publisher
// takes events from events_unpublished, after a crash too, and a dispatcher takes a delivery that
// waited in its webhook's lane from held_deliveries. Each row keeps the capture time beside it,
// written by the statement that writes the row already. Null: not known (a row written by a version
// before this one), and then nothing is observed.
//
// For a grouped `*.updated` event it is the group's first change (event_groups.first_change_at).
// record_events takes the capture times as a new overload: 0017's stays, for a recorder of the
// previous version still running during a rolling update (its events carry none). The body is
// 0017's, with the capture time carried through; why each part is as it is, is in recordEvents.
// Frozen.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    ALTER TABLE events_unpublished ADD COLUMN captured_at timestamptz;
    ALTER TABLE held_deliveries ADD COLUMN captured_at timestamptz;
    CREATE FUNCTION record_events(agency_ids text[], types text[], object_types text[], object_ids text[],
                                  datas text[], captured_ats timestamptz[], due_groups int)
      RETURNS SETOF events_unpublished LANGUAGE plpgsql AS $$
    BEGIN
      RETURN QUERY
      WITH given AS (
        SELECT * FROM unnest(agency_ids, types, object_types, object_ids, datas, captured_ats)
          WITH ORDINALITY AS u(agency_id, type, object_type, object_id, data, captured_at, ord)
      ), due AS (
        DELETE FROM event_groups g USING (
          SELECT e.object_type, e.object_id FROM event_groups e WHERE e.due_at <= clock_timestamp()
           ORDER BY e.due_at, e.object_type, e.object_id LIMIT due_groups
        ) d
         WHERE g.object_type = d.object_type AND g.object_id = d.object_id
        RETURNING g.object_type, g.object_id, g.agency_id, g.due_at, g.first_change_at
      ), input AS (
        SELECT i.agency_id, i.type, i.object_type, i.object_id, i.data::jsonb AS data, i.captured_at, i.ord
          FROM given i
        UNION ALL
        SELECT d.agency_id, d.object_type || '.updated', d.object_type, d.object_id, '{}'::jsonb,
               d.first_change_at,
               cardinality(agency_ids) + row_number() OVER (ORDER BY d.due_at, d.object_type, d.object_id)
          FROM due d
      ), numbered AS (
        SELECT nextval('events_seq') AS seq, gen_id('evt') AS id, i.agency_id, i.type, i.object_type,
               i.object_id, i.data, date_trunc('milliseconds', clock_timestamp()) AS created_at, i.captured_at
          FROM (SELECT * FROM input ORDER BY ord) i
      ), recorded AS (
        INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
          SELECT n.seq, n.id, n.agency_id, n.type, n.object_type, n.object_id, n.data, n.created_at FROM numbered n
      )
      INSERT INTO events_unpublished (seq, id, agency_id, type, object_type, object_id, data, created_at, captured_at)
        SELECT n.seq, n.id, n.agency_id, n.type, n.object_type, n.object_id, n.data, n.created_at, n.captured_at
          FROM numbered n
        RETURNING *;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP FUNCTION record_events(text[], text[], text[], text[], text[], timestamptz[], int);
    ALTER TABLE held_deliveries DROP COLUMN captured_at;
    ALTER TABLE events_unpublished DROP COLUMN captured_at;
  `.execute(db);
}
