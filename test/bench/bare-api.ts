// The baseline for `pnpm bench:api`: the least an Express + pg server can do to answer
// GET /api/v1/trips/:id. No auth, rate limit, request id, access log or presenter: whatever our API
// costs beyond this is the price of those.
import { createRequire } from 'node:module';

// express and pg resolved from the API's own package, so both servers run the very same versions
// and differ only in our code. (test/ has no dependencies of its own on them.)
const require = createRequire(new URL('../../services/api/package.json', import.meta.url));

interface Res {
  json(body: unknown): void;
  status(code: number): Res;
}
type Handler = (req: { params: Record<string, string> }, res: Res) => void | Promise<void>;
interface App {
  get(path: string, handler: Handler): void;
  listen(port: number, callback: (error?: Error) => void): void;
}
interface Pool {
  query(query: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
  end(): Promise<void>;
}

const express = require('express') as () => App;
const pg = require('pg') as { Pool: new (config: { connectionString: string; max: number }) => Pool };

const agencyId = process.env.BENCH_AGENCY_ID!;
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL!,
  max: Number(process.env.API_DB_POOL_SIZE ?? 10),
});

// The shape of findTrip's query in packages/db: the trip of this agency, never a template, with
// its itinerary's non_golfers.
const FIND_TRIP = `
  SELECT t.id, t.title, t.status, t.region, t.base_camp, t.start_date, t.end_date, t.num_days,
         t.golfers, t.client_page_published, t.client_page_url, t.accepted_at, t.created_at,
         t.updated_at, i.non_golfers
    FROM trips AS t LEFT JOIN itineraries AS i ON i.trip_id = t.id
   WHERE t.id = $1 AND t.agency_id = $2 AND t.is_template = $3`;

// With BENCH_PREPARED=1 the query is a named statement, prepared once per connection as ours'
// lookup is: the like-for-like baseline for what our own layers cost. Without it, pg's default,
// what a bare handler does: Postgres parses and plans the query on every request.
const name = process.env.BENCH_PREPARED === '1' ? 'find_trip' : undefined;

const app = express();
app.get('/healthz', (_req, res) => res.json({ status: 'ok' }));
app.get('/api/v1/trips/:id', async (req, res) => {
  const { rows } = await pool.query({ name, text: FIND_TRIP, values: [req.params.id, agencyId, false] });
  if (rows.length === 0) res.status(404).json({ error: 'not_found' });
  else res.json(rows[0]);
});
app.listen(Number(process.env.PORT), (error) => {
  if (error) throw error;
});
// Exit on SIGTERM like the API does, so `node --cpu-prof` can write its profile.
process.on('SIGTERM', () => void pool.end().finally(() => process.exit(0)));
