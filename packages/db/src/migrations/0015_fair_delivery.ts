import { sql, type Kysely } from 'kysely';

// Fair delivery (issue 23). Every agency's events share one events queue, and a delivery queue is
// a FIFO: a webhook with a backlog (a bulk import, a slow or dead endpoint) made every delivery
// behind it wait, whoever it was for. A delivery that cannot be attempted at once now waits here,
// in its webhook's own lane: dispatchers claim from each lane as that webhook has room, so one
// webhook's backlog costs the others nothing, and a dead endpoint's costs nothing until it answers.
//
// `delivery` is the DeliveryMessage as the queues carry it. `not_before`: not to be attempted
// before then (a retry whose delay queue was full waits out its delay here). `claimed_until`: a
// dispatcher is attempting the row until then; after it (the dispatcher died), another may claim
// it again. Null: free. The lane index serves the claim (oldest first) and the scan for lanes.
//
// The recorder publishes events_unpublished round-robin across agencies for the same reason
// (takeUnpublished): the dispatcher's events queue is bounded now, and what waits for room waits
// there, where the next batch can take every agency's oldest first. Its index serves that take.
// Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE held_deliveries (
      id bigserial PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      delivery jsonb NOT NULL,
      not_before timestamptz,
      claimed_until timestamptz
    );
    CREATE INDEX held_deliveries_lane ON held_deliveries (webhook_id, id);
    CREATE INDEX events_unpublished_agency ON events_unpublished (agency_id, seq);
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX events_unpublished_agency; DROP TABLE held_deliveries`.execute(db);
}
