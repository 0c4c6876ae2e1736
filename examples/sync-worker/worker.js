// An agency's sync worker (docs/sdk.md, "Examples"): keeps a copy of its trips in its own
// Postgres, up to date from GET /events, with the cursor in the same database. Stop it and start it
// again, and it goes on from where it stopped; a first run, or a cursor older than the API keeps
// events (410), copies every trip first.
import pg from 'pg';
// In your own project: `npm install @trips/sdk` and import from '@trips/sdk'. This repository's
// example runs the SDK from its sources, so it needs no build first.
import { TripService } from '../../packages/sdk/src/index.ts';

const { TRIPS_API_KEY } = process.env;
if (!TRIPS_API_KEY) {
  console.error('Set TRIPS_API_KEY: a key of the agency with events:read and trips:read (tps_…).');
  process.exit(2);
}
const baseUrl = process.env.TRIPS_BASE_URL ?? 'http://localhost:3000';
const client = new TripService({ apiKey: TRIPS_API_KEY, baseUrl });
// Your database: any Postgres; the worker keeps its tables in a schema of their own.
const pool = new pg.Pool({
  connectionString: process.env.SYNC_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  max: 2,
});

const schema = `
  CREATE SCHEMA IF NOT EXISTS trips_sync;
  CREATE TABLE IF NOT EXISTS trips_sync.state (id int PRIMARY KEY CHECK (id = 1), cursor text NOT NULL);
  CREATE TABLE IF NOT EXISTS trips_sync.trips (
    id text PRIMARY KEY, title text NOT NULL, status text NOT NULL, updated_at timestamptz NOT NULL
  );`;

/** The cursor store: two functions over one row. */
const cursorStore = {
  load: async () => (await pool.query('SELECT cursor FROM trips_sync.state')).rows[0]?.cursor,
  save: async (cursor) => {
    await pool.query(
      'INSERT INTO trips_sync.state (id, cursor) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET cursor = $1',
      [cursor],
    );
  },
};

// Idempotent: an event can come twice, and writing a trip as it is now twice changes nothing.
const upsert = (trip) =>
  pool.query(
    `INSERT INTO trips_sync.trips (id, title, status, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET title = $2, status = $3, updated_at = $4`,
    [trip.id, trip.title, trip.status, trip.updated_at],
  );

async function copyAll() {
  let count = 0;
  for await (const trip of client.trips.list({ limit: 200 })) {
    await upsert(trip);
    count++;
  }
  console.log(`copied all ${count} trips`);
}

const tripEvents = ['trip.created', 'trip.updated', 'trip.status_changed', 'trip.deleted'];
const controller = new AbortController();
process.once('SIGINT', () => controller.abort());
process.once('SIGTERM', () => controller.abort());

try {
  await pool.query(schema);
  if (!(await cursorStore.load())) {
    // From now on events say what changes; what is there already is copied once.
    const now = await client.events.currentCursor({ types: tripEvents });
    await copyAll();
    await cursorStore.save(now);
  }
  console.log(`Syncing trips from ${baseUrl} into trips_sync.trips. Ctrl-C stops.`);
  await client.events.consume({
    cursorStore,
    types: tripEvents,
    signal: controller.signal,
    handler: async (event) => {
      const trip = await client.events.fetchRelatedObject(event);
      if (trip) await upsert(trip);
      else await pool.query('DELETE FROM trips_sync.trips WHERE id = $1', [event.related_object.id]);
      console.log(`${event.type.padEnd(19)}  ${event.related_object.id}  ${trip ? trip.status : 'deleted'}`);
    },
    onCursorExpired: copyAll,
  });
  console.log('stopped');
} catch (error) {
  console.error(`Sync stopped: ${error.message}`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
