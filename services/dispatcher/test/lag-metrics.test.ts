import type { DeliveryMessage } from '@trips/contracts';
import { topology } from '@trips/broker';
import { createMetricsRegistry } from '@trips/runtime';
import type { Outcome } from '../src/deliverer.ts';
import type { Endpoints } from '../src/endpoint/endpoints.ts';
import { dispatcherMetrics } from '../src/metrics.ts';

// The delivery lag histogram and the oldest pending delivery, on a registry of their own: which
// deliveries count, as first or retry, and what a scrape reads. The system test
// (test/monitoring/exported.test.ts) sees the same metrics from a running dispatcher.

const recordedAt = Date.parse('2026-11-26T10:00:00.000Z');
const delivery = (attempt: number, id = 'evt_1'): DeliveryMessage =>
  ({
    webhook_id: 'whk_1',
    agency_id: 'agy_1',
    epoch: 1,
    attempt,
    first_failed_at: null,
    event: { id, created_at: new Date(recordedAt).toISOString() },
  }) as DeliveryMessage;
/** A 2xx that came `seconds` after the event was recorded (the attempt took 100 ms of it). */
const delivered = (seconds: number): Outcome => ({
  kind: 'delivered',
  result: {
    at: new Date(recordedAt + seconds * 1000 - 100),
    durationMs: 100,
    statusCode: 200,
    error: null,
    body: '',
  },
});

function setup(
  pendingAges = async () => ({ held: 42 as number | null, retryScheduled: null as number | null }),
) {
  const registry = createMetricsRegistry('dispatcher');
  const metrics = dispatcherMetrics(registry, {
    endpoints: { openCount: () => 0 } as unknown as Endpoints,
    checkQueue: async () => ({ messageCount: 0 }),
    topology: topology('test.', [1_000]),
    countHeld: async () => 0,
    pendingAges,
  });
  const line = async (series: string) =>
    (await registry.metrics())
      .split('\n')
      .find((l) => l.startsWith(`${series} `))
      ?.split(' ')[1];
  return { metrics, line };
}

test('first deliveries and retries are timed from the recording to the 2xx; owners’ redeliveries and test events are not', async () => {
  const { metrics, line } = setup();
  metrics.observe(delivered(0.2), delivery(1), 'fan_out');
  metrics.observe(delivered(3), delivery(1), 'lane');
  metrics.observe(delivered(400), delivery(3), 'deliveries_queue');
  // An owner's redelivery of a week-old event, and a test event: first attempts from the deliveries queue.
  metrics.observe(delivered(7 * 86_400), delivery(1), 'deliveries_queue');
  metrics.observe(delivered(0.1), delivery(1, 'evt_test_abc'), 'lane');
  const series = (attempt: string, part: string) =>
    line(`trips_event_record_to_delivery_seconds_${part}{service="dispatcher",attempt="${attempt}"}`);
  expect(await series('first', 'count')).toBe('2');
  expect(Number(await series('first', 'sum'))).toBeCloseTo(3.2, 3);
  expect(
    await line(
      'trips_event_record_to_delivery_seconds_bucket{le="0.25",service="dispatcher",attempt="first"}',
    ),
  ).toBe('1');
  expect(await series('retry', 'count')).toBe('1');
  expect(Number(await series('retry', 'sum'))).toBeCloseTo(400, 3);
  // Every outcome is still counted.
  expect(await line('trips_deliveries_total{outcome="delivered",service="dispatcher"}')).toBe('5');
});

test('deliveries held, deferred and dropped are counted by reason; the rest by outcome alone', async () => {
  const { metrics, line } = setup();
  metrics.observe({ kind: 'held', reason: 'endpoint_busy' }, delivery(1), 'fan_out');
  metrics.observe({ kind: 'held', reason: 'endpoint_busy' }, delivery(1), 'fan_out');
  metrics.observe({ kind: 'held', reason: 'paced' }, delivery(1), 'fan_out');
  metrics.observe({ kind: 'dropped', reason: 'webhook_gone' }, delivery(1), 'lane');
  metrics.observe(delivered(0.2), delivery(1), 'fan_out');
  const total = (labels: string) => line(`trips_deliveries_total{${labels},service="dispatcher"}`);
  expect(await total('outcome="held",reason="endpoint_busy"')).toBe('2');
  expect(await total('outcome="held",reason="paced"')).toBe('1');
  expect(await total('outcome="dropped",reason="webhook_gone"')).toBe('1');
  expect(await total('outcome="delivered"')).toBe('1');
});

test('from the capture: by attempt and grouped, only when the capture time is known', async () => {
  const { metrics, line } = setup();
  const capturedAt = new Date(recordedAt - 2_000);
  const updated = (attempt: number) => {
    const d = delivery(attempt);
    return { ...d, event: { ...d.event, type: 'trip.updated' } } as DeliveryMessage;
  };
  metrics.observe(
    delivered(0.5),
    { ...delivery(1), event: { ...delivery(1).event, type: 'trip.created' } } as DeliveryMessage,
    'fan_out',
    capturedAt,
  );
  metrics.observe(delivered(60), updated(1), 'lane', new Date(recordedAt - 240_000));
  metrics.observe(delivered(30), updated(2), 'deliveries_queue', capturedAt);
  // Not known: a message of a version before the header, or an owner's redelivery held in a lane.
  metrics.observe(delivered(1), delivery(1), 'lane');
  const series = (attempt: string, grouped: string, part: string) =>
    line(
      `trips_change_capture_to_delivery_seconds_${part}{service="dispatcher",attempt="${attempt}",grouped="${grouped}"}`,
    );
  expect(await series('first', 'false', 'count')).toBe('1');
  expect(Number(await series('first', 'false', 'sum'))).toBeCloseTo(2.5, 3);
  expect(await series('first', 'true', 'count')).toBe('1');
  expect(Number(await series('first', 'true', 'sum'))).toBeCloseTo(300, 3);
  expect(await series('retry', 'true', 'count')).toBe('1');
  expect(Number(await series('retry', 'true', 'sum'))).toBeCloseTo(32, 3);
  expect(await series('retry', 'false', 'count')).toBeUndefined();
  // From the recording, every one of them.
  expect(
    await line('trips_event_record_to_delivery_seconds_count{service="dispatcher",attempt="first"}'),
  ).toBe('3');
});

test('a failed attempt is no delivery: no lag observed', async () => {
  const { metrics, line } = setup();
  const failed: Outcome = {
    kind: 'retry_scheduled',
    delayMs: 60_000,
    dueAt: new Date(recordedAt + 60_000),
    result: { at: new Date(recordedAt), durationMs: 10, statusCode: 500, error: 'http_status', body: '' },
  };
  metrics.observe(failed, delivery(1), 'fan_out');
  expect(
    await line('trips_event_record_to_delivery_seconds_count{service="dispatcher",attempt="first"}'),
  ).toBeUndefined();
});

test('the oldest pending delivery per outcome: 0 when none waits, NaN while Postgres does not answer', async () => {
  expect(
    await setup().line('trips_pending_delivery_oldest_age_seconds{outcome="held",service="dispatcher"}'),
  ).toBe('42');
  expect(
    await setup().line(
      'trips_pending_delivery_oldest_age_seconds{outcome="retry_scheduled",service="dispatcher"}',
    ),
  ).toBe('0');
  const down = setup(async () => Promise.reject(new Error('connection refused')));
  expect(
    await down.line('trips_pending_delivery_oldest_age_seconds{outcome="held",service="dispatcher"}'),
  ).toMatch(/^nan$/i); // prom-client writes Nan; the format takes any case
});
