import pg from 'pg';
import { createDb } from '@trips/db';
import { createMetricsRegistry } from '@trips/runtime';
import { createTestDatabase, LogCapture, type TestDatabase } from '@trips/testkit';
import { addSyncHorizonMetric } from '../src/sync-horizon-metric.ts';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const count = (text: string, labels: Record<string, string>) => {
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('trips_http_request_duration_seconds_count{') &&
        Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)),
    );
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
};

test('GET /metrics on its own port: latency by route pattern and status, never by raw path', async () => {
  const get = client(api.url, own.key);
  const trip = await insertTrip(t.db, own.agencyId);
  await get(`/api/v1/trips/${trip.id}`);
  await get(`/api/v1/trips/${trip.id}`);
  await get('/api/v1/trips/trp_missing');
  await get('/api/v1/nowhere');

  const res = await fetch(api.metricsUrl);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(count(text, { method: 'GET', route: '/api/v1/trips/:id', status: '200' })).toBe(2);
  expect(count(text, { method: 'GET', route: '/api/v1/trips/:id', status: '404' })).toBe(1);
  expect(count(text, { route: 'unmatched', status: '404' })).toBe(1);
  expect(text).not.toContain(trip.id);
  expect(text).toContain('process_resident_memory_bytes{service="api"}');
  // Not on the public port.
  expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
});

test('trips_sync_horizon_lag_seconds: 0, then how long a writing transaction has held list sync back', async () => {
  const lag = async () => {
    const text = await (await fetch(api.metricsUrl)).text();
    const line = text.split('\n').find((l) => l.startsWith('trips_sync_horizon_lag_seconds{'));
    return Number(line!.split(' ').at(-1));
  };
  // Near 0: only the services' own short writes (a key's last use, say) may be open meanwhile.
  expect(await lag()).toBeLessThan(0.2);
  const writer = new pg.Client({ connectionString: t.url });
  await writer.connect();
  try {
    await writer.query('BEGIN');
    await writer.query('SELECT pg_current_xact_id()'); // has written, as far as the horizon goes
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await lag()).toBeGreaterThanOrEqual(0.3);
    await writer.query('COMMIT');
    expect(await lag()).toBeLessThan(0.2);
  } finally {
    await writer.end();
  }
});

test('while the database does not answer, the horizon gauge reads NaN and the rest of the scrape still answers', async () => {
  const registry = createMetricsRegistry('api');
  const logs = new LogCapture();
  const unreachable = createDb('postgres://postgres@127.0.0.1:1/trips', { max: 1 });
  try {
    addSyncHorizonMetric(registry, unreachable, logs.logger);
    const text = await registry.metrics();
    // prom-client writes "Nan", which Prometheus reads as NaN (its float parsing ignores case).
    expect(text).toMatch(/^trips_sync_horizon_lag_seconds\{service="api"\} NaN$/im);
    expect(text).toContain('process_resident_memory_bytes{service="api"}');
    expect(logs.lines.join('')).toContain('sync horizon not read for /metrics');
  } finally {
    await unreachable.destroy();
  }
});
