import { sql, type Kysely } from 'kysely';

// The recorder's heaviest statement as a function (repositories/events.ts, recordEvents): records
// a batch's events, then one `<object>.updated` per group now due, each also queued for publishing.
// As a statement of its own, sent as text in the recorder's script, Postgres parsed, analysed and
// planned it anew for every batch, the largest part of what the recorder's backends spent.
// PL/pgSQL keeps its plan for the session, and the script's text
// shrinks to a call. The body is the statement as it was; why each part is as it is, is in
// recordEvents. Frozen: a change is a new migration that replaces the function.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE FUNCTION record_events(agency_ids text[], types text[], object_types text[], object_ids text[],
                                  datas text[], due_groups int)
      RETURNS SETOF events_unpublished LANGUAGE plpgsql AS $$
    BEGIN
      RETURN QUERY
      WITH given AS (
        SELECT * FROM unnest(agency_ids, types, object_types, object_ids, datas)
          WITH ORDINALITY AS u(agency_id, type, object_type, object_id, data, ord)
      ), due AS (
        DELETE FROM event_groups g USING (
          SELECT e.object_type, e.object_id FROM event_groups e WHERE e.due_at <= clock_timestamp()
           ORDER BY e.due_at, e.object_type, e.object_id LIMIT due_groups
        ) d
         WHERE g.object_type = d.object_type AND g.object_id = d.object_id
        RETURNING g.object_type, g.object_id, g.agency_id, g.due_at
      ), input AS (
        SELECT i.agency_id, i.type, i.object_type, i.object_id, i.data::jsonb AS data, i.ord FROM given i
        UNION ALL
        SELECT d.agency_id, d.object_type || '.updated', d.object_type, d.object_id, '{}'::jsonb,
               cardinality(agency_ids) + row_number() OVER (ORDER BY d.due_at, d.object_type, d.object_id)
          FROM due d
      ), numbered AS (
        SELECT nextval('events_seq') AS seq, gen_id('evt') AS id, i.agency_id, i.type, i.object_type,
               i.object_id, i.data, date_trunc('milliseconds', clock_timestamp()) AS created_at
          FROM (SELECT * FROM input ORDER BY ord) i
      ), recorded AS (
        INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
          SELECT n.seq, n.id, n.agency_id, n.type, n.object_type, n.object_id, n.data, n.created_at FROM numbered n
          RETURNING *
      )
      INSERT INTO events_unpublished (seq, id, agency_id, type, object_type, object_id, data, created_at)
        SELECT r.seq, r.id, r.agency_id, r.type, r.object_type, r.object_id, r.data, r.created_at FROM recorded r
        RETURNING *;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP FUNCTION record_events(text[], text[], text[], text[], text[], int)`.execute(db);
}
