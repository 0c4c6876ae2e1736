// The capture time of an event's change, which the recorder sends in the message's headers, goes
// with each delivery wherever it waits: into its webhook's lane in Postgres (held_deliveries), read
// back when the lane delivers it, and trips_change_capture_to_delivery_seconds times the 2xx from
// it. A message without one is timed from its recording only. The retry through a delay queue is
// in test/monitoring/commit-lag.test.ts, with the recorder in front.
import {
  createTestCa,
  sample,
  scrapeMetrics,
  startReceiver,
  waitFor,
  type TestCa,
  type TestReceiver,
} from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

const CAPTURE = 'trips_change_capture_to_delivery_seconds';
const RECORD = 'trips_event_record_to_delivery_seconds';
const FIRST = { attempt: 'first', grouped: 'false' };

let ca: TestCa;
let receiver: TestReceiver;
let d: TestDispatcher;

beforeAll(async () => {
  ca = await createTestCa();
  receiver = await startReceiver(ca);
  // One attempt at a time per webhook, and no wait for a slot: a second delivery goes to the lane.
  d = await startTestDispatcher({
    WEBHOOK_CA_FILE: ca.caFile,
    DISPATCHER_ENDPOINT_CONCURRENCY: '1',
    DISPATCHER_INLINE_WAIT: '0ms',
    DISPATCHER_LANE_SCAN_INTERVAL: '200ms',
  });
});

afterAll(async () => {
  await d?.cleanup();
  await receiver?.close();
});

const scrape = () => scrapeMetrics(`http://127.0.0.1:${d.service.healthPort}/metrics`);
const delivered = (eventIds: string[]) =>
  waitFor(
    () => eventIds.every((id) => d.outcomes.some((o) => o.eventId === id && o.outcome.kind === 'delivered')),
    { what: 'every delivery' },
  );

test('a delivery held in its webhook’s lane keeps its capture time in Postgres and is timed from it', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const webhook = await webhookFor(d.db, agencyId, receiver.url, ['trip.created']);
  // Each answer takes a second: while one attempt holds the webhook's slot, the other waits.
  receiver.answer = () => ({ status: 200, delayMs: 1_000 });
  // Captured 100 s before: a writer's long transaction, or a backlog in front of the recorder.
  const capturedAt = new Date(Date.now() - 100_000);
  const events = [makeEvent('trip.created'), makeEvent('trip.created')];
  for (const event of events) await d.publish(agencyId, event, capturedAt);

  const held = await waitFor(
    async () => {
      const rows = await d.db
        .selectFrom('held_deliveries')
        .select('captured_at')
        .where('webhook_id', '=', webhook.id)
        .execute();
      return rows.length > 0 && rows;
    },
    { what: 'a delivery held in the lane', intervalMs: 20 },
  );
  expect(held.map((row) => row.captured_at)).toEqual(held.map(() => capturedAt));
  await delivered(events.map((e) => e.id));

  const text = await scrape();
  expect(sample(text, `${CAPTURE}_count`, FIRST)).toBe(2);
  expect(sample(text, `${CAPTURE}_sum`, FIRST)).toBeGreaterThanOrEqual(200);
  // From their recording (just now) they were quick: the capture time is what tells.
  expect(sample(text, `${RECORD}_sum`, { attempt: 'first' })).toBeLessThan(20);
});

test('a message without a capture time (a previous version’s, an owner’s) is timed from its recording only', async () => {
  const { agencyId } = await agencyWithOwners(d.db, 'Old Tours');
  await webhookFor(d.db, agencyId, receiver.url, ['trip.created']);
  receiver.answer = () => ({ status: 200 });
  const before = await scrape();
  const event = makeEvent('trip.created');
  await d.publish(agencyId, event);
  await delivered([event.id]);

  const text = await scrape();
  expect(sample(text, `${RECORD}_count`, { attempt: 'first' })).toBe(
    (sample(before, `${RECORD}_count`, { attempt: 'first' }) ?? 0) + 1,
  );
  expect(sample(text, `${CAPTURE}_count`)).toBe(sample(before, `${CAPTURE}_count`));
});
