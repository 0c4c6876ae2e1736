import { sql, type Kysely } from 'kysely';

// List sync (D4) returns only rows older than its horizon, so that a row committed late is never
// skipped (repositories/sync.ts). The horizon was the start of the oldest transaction open in the
// database, whatever that transaction did: a nightly pg_dump, a read-only report or a session left
// idle in a transaction held every agency's sync back for as long as it stayed open.
//
// Now only transactions that hold a transaction id (that have written) hold it back. For that,
// a row must never carry a time from before its writer got its id: updated_at becomes the time
// of the write itself (clock_timestamp()), taken after the trigger has made sure the writer holds
// an id. A transaction the horizon query finds without one can then only write rows with a later
// updated_at than the horizon, and the next sync picks them up. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- The id first, then the time: in this order a reader that saw this session without an id
      -- saw it before this row's updated_at.
      PERFORM pg_current_xact_id();
      NEW.updated_at := clock_timestamp();
      RETURN NEW;
    END $$
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION set_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.updated_at := now();
      RETURN NEW;
    END $$
  `.execute(db);
}
