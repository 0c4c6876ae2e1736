import {
  createTestCa,
  sample,
  scrapeMetrics,
  startReceiver,
  waitFor,
  type TestCa,
  type TestReceiver,
} from '@trips/testkit';
import type { LineWaitEnd } from '../src/deliverer.ts';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// Per-endpoint protection: a breaker that opens after 3 attempts mostly failing and tries again
// after 1 s, and at most 2 attempts in flight per endpoint; what an endpoint cannot take at once
// waits in its lane (lanes.ts). A long window, so nothing gives up.
let ca: TestCa;
let d: TestDispatcher;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  ca = await createTestCa();
  d = await startTestDispatcher(
    {
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_RETRY_DELAYS: '1s',
      WEBHOOK_FAILURE_WINDOW: '1m',
      DISPATCHER_ENDPOINT_CONCURRENCY: '2',
      DISPATCHER_LANE_SCAN_INTERVAL: '200ms',
    },
    {
      protection: {
        breaker: {
          errorThresholdPercentage: 50,
          volumeThreshold: 3,
          rollingWindowMs: 10_000,
          cooldownMs: 1_000,
        },
      },
    },
  );
});

afterAll(async () => {
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

const succeededEventIds = async (webhookId: string) =>
  new Set(
    (
      await d.db
        .selectFrom('webhook_attempts')
        .select('event_id')
        .where('webhook_id', '=', webhookId)
        .where('succeeded', '=', true)
        .execute()
    ).map((r) => r.event_id),
  );

/** Deliveries still waiting in the webhook's lane. */
const heldLeft = async (webhookId: string) =>
  (await d.db.selectFrom('held_deliveries').select('id').where('webhook_id', '=', webhookId).execute())
    .length;

/** The attempt numbers logged for a webhook: all 1 when every event got through on its first. */
const attemptNumbers = async (webhookId: string) =>
  (
    await d.db.selectFrom('webhook_attempts').select('attempt').where('webhook_id', '=', webhookId).execute()
  ).map((a) => a.attempt);

test('an open breaker holds deliveries in the lane; none is dropped, all arrive once the endpoint recovers', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  r.answer = () => ({ status: 500 });
  const webhook = await webhookFor(d.db, agencyId, r.url, ['payment.paid']);
  const events = Array.from({ length: 30 }, () => makeEvent('payment.paid'));
  for (const event of events) await d.publish(agencyId, event);

  const mine = () => d.outcomes.filter((o) => o.webhookId === webhook.id);
  await waitFor(
    () => mine().filter((o) => o.outcome.kind === 'held' && o.outcome.reason === 'circuit_open').length >= 10,
    { what: 'deliveries held behind the open breaker' },
  );
  // The breaker spared the endpoint most of those: far fewer requests than deliveries so far.
  expect(r.requests.length).toBeLessThan(mine().length);

  r.answer = () => ({ status: 200 });
  await waitFor(async () => (await succeededEventIds(webhook.id)).size === events.length, {
    timeoutMs: 20_000,
    what: 'every event delivered after recovery',
  });
  expect(mine().some((o) => o.outcome.kind === 'dropped' || o.outcome.kind === 'gave_up')).toBe(false);
  // Holding is not an attempt: only attempts that were made are in the log.
  const logged = await d.db
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('webhook_id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  expect(Number(logged.n)).toBe(r.requests.length);
});

/** The dispatcher's line waits so far (trips_endpoint_line_wait_seconds) that ended as `then`. */
async function lineWaits(then: LineWaitEnd): Promise<{ count: number; sum: number }> {
  const text = await scrapeMetrics(`http://127.0.0.1:${d.service.healthPort}/metrics`);
  const value = (part: string) => sample(text, `trips_endpoint_line_wait_seconds_${part}`, { then }) ?? 0;
  return { count: value('count'), sum: value('sum') };
}

test('at most the cap of attempts is in flight to one endpoint; the excess is deferred and still delivered', async () => {
  const heldBefore = await lineWaits('held');
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  let inFlight = 0;
  let maxInFlight = 0;
  r.answer = () => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(() => inFlight--, 300).unref();
    return { status: 200, delayMs: 300 };
  };
  const webhook = await webhookFor(d.db, agencyId, r.url, ['contact.created']);
  const events = Array.from({ length: 12 }, () => makeEvent('contact.created'));
  for (const event of events) await d.publish(agencyId, event);

  await waitFor(async () => (await succeededEventIds(webhook.id)).size === events.length, {
    timeoutMs: 20_000,
    what: 'every event delivered',
  });
  expect(maxInFlight).toBe(2);
  const mine = d.outcomes.filter((o) => o.webhookId === webhook.id);
  // Fan-out made 2 first attempts and held the rest of the burst in the lane rather than hold their
  // events; the lane sent them as slots freed.
  expect(mine.filter((o) => o.outcome.kind === 'held').length).toBeGreaterThanOrEqual(events.length - 2);
  // Those that waited in memory for a slot first waited the inline wait (250 ms) out: the metric
  // that shows a webhook taking deliveries more slowly than they come says so.
  const held = await lineWaits('held');
  expect(held.count).toBeGreaterThan(heldBefore.count);
  expect((held.sum - heldBefore.sum) / (held.count - heldBefore.count)).toBeGreaterThanOrEqual(0.24);
  // Holding is not an attempt: every event got through on its first.
  expect(await attemptNumbers(webhook.id)).toEqual(events.map(() => 1));
  expect(await heldLeft(webhook.id)).toBe(0);
});

test('a slow endpoint is not attempted while a message waits on it: its deliveries wait in its lane and go out on their first attempt', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  r.answer = () => ({ status: 200, delayMs: 1_500 }); // slow, within the 2 s WEBHOOK_TIMEOUT
  const webhook = await webhookFor(d.db, agencyId, r.url, ['trip.updated']);
  const first = [makeEvent('trip.updated'), makeEvent('trip.updated')];
  for (const event of first) await d.publish(agencyId, event);
  await waitFor(async () => (await succeededEventIds(webhook.id)).size === first.length, {
    what: 'the first two, attempted at fan-out, delivered',
  });

  // Known slow now: new events are acked at once, their deliveries held for the lane.
  const events = Array.from({ length: 6 }, () => makeEvent('trip.updated'));
  for (const event of events) await d.publish(agencyId, event);
  await waitFor(async () => (await succeededEventIds(webhook.id)).size === first.length + events.length, {
    timeoutMs: 20_000,
    what: 'every event delivered',
  });
  const heldFor = (eventId: string) =>
    d.outcomes.find((o) => o.eventId === eventId && o.outcome.kind === 'held')?.outcome;
  for (const event of events) expect(heldFor(event.id)).toMatchObject({ kind: 'held' });
  expect(d.outcomes.some((o) => o.webhookId === webhook.id && o.outcome.kind === 'retry_scheduled')).toBe(
    false,
  );
  expect(await attemptNumbers(webhook.id)).toEqual([...first, ...events].map(() => 1));
});
