import { sql } from 'kysely';
import { waitFor } from '@trips/testkit';
import { hostWrite, startTestRecorder, type TestRecorder } from './helpers.ts';

let recorder: TestRecorder;
let t: TestRecorder['t'];
let service: TestRecorder['service'];
beforeAll(async () => {
  recorder = await startTestRecorder();
  ({ t, service } = recorder);
});
afterAll(async () => {
  await recorder.cleanup();
});

const scrape = async () => (await fetch(`http://127.0.0.1:${service.healthPort}/metrics`)).text();
const value = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' ') || l.startsWith(series + '{'));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
};

test('/metrics counts captured, recorded and published events and shows the lag', async () => {
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_M', 'Metrics')`);
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_m1', 'agy_M', 'T', 3)`,
  );
  await hostWrite(t.db, `UPDATE trips SET status = 'planning' WHERE id = 'trp_m1'`);

  const text = await waitFor(
    async () => {
      const body = await scrape();
      return (value(body, 'trips_events_published_total{service="recorder"}') ?? 0) >= 2 && body;
    },
    { what: 'two published events in /metrics' },
  );
  expect(value(text, 'trips_changes_captured_total{service="recorder"}')).toBe(2);
  expect(text).toContain('trips_events_recorded_total{type="trip.created",service="recorder"} 1');
  expect(text).toContain('trips_events_recorded_total{type="trip.status_changed",service="recorder"} 1');
  expect(value(text, 'trips_recorder_lag_seconds{service="recorder"}')).toBe(0);
  expect(value(text, 'trips_events_unpublished{service="recorder"}')).toBe(0);
  // Node's own metrics are there too.
  expect(text).toContain('process_resident_memory_bytes{service="recorder"}');
});

test('capture → record is timed from the capture in the writer’s transaction, record → publish per event', async () => {
  const before = await scrape();
  const count = (text: string, histogram: string) =>
    value(text, `${histogram}_count{service="recorder"}`) ?? 0;
  const sum = (text: string, histogram: string) => value(text, `${histogram}_sum{service="recorder"}`) ?? 0;
  // The writer captures its change, then keeps its transaction open 1.5 s before committing: the
  // change's own clock starts at the capture, the closest time to the commit that it carries.
  await t.db.transaction().execute(async (trx) => {
    await sql`INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_m2', 'agy_M', 'Late', 2)`.execute(
      trx,
    );
    await sql`SELECT pg_sleep(1.5)`.execute(trx);
  });
  const text = await waitFor(
    async () => {
      const body = await scrape();
      return (
        count(body, 'trips_event_record_to_publish_seconds') >
          count(before, 'trips_event_record_to_publish_seconds') && body
      );
    },
    { what: 'the late trip published' },
  );
  const capture = 'trips_change_capture_to_record_seconds';
  expect(count(text, capture) - count(before, capture)).toBe(1);
  expect(sum(text, capture) - sum(before, capture)).toBeGreaterThanOrEqual(1.5);
  expect(value(text, `${capture}_bucket{le="1",service="recorder"}`)).toBe(
    value(before, `${capture}_bucket{le="1",service="recorder"}`),
  );
  // Published within a few poll intervals of its recording, in the same batch's confirm.
  const publish = 'trips_event_record_to_publish_seconds';
  expect(count(text, publish) - count(before, publish)).toBe(1);
  expect(sum(text, publish) - sum(before, publish)).toBeLessThan(1);
  // Reached Postgres and RabbitMQ at this scrape.
  expect(text).toContain('trips_dependency_up{dependency="postgres",service="recorder"} 1');
  expect(text).toContain('trips_dependency_up{dependency="rabbitmq",service="recorder"} 1');
});
