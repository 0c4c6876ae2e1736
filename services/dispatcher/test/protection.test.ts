import { createTestCa, startReceiver, waitFor, type TestCa, type TestReceiver } from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// Per-endpoint protection: a breaker that opens after 3 attempts mostly failing and tries again
// after 1 s, at most 2 attempts in flight per endpoint, and deliveries put off for a busy one back
// off from 300 ms to 600 ms. A long window, so nothing gives up.
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
      DISPATCHER_BUSY_DELAYS: '300ms,600ms',
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

/** The attempt numbers logged for a webhook: all 1 when every event got through on its first. */
const attemptNumbers = async (webhookId: string) =>
  (
    await d.db.selectFrom('webhook_attempts').select('attempt').where('webhook_id', '=', webhookId).execute()
  ).map((a) => a.attempt);

test('an open breaker defers deliveries to the retry path; none is dropped, all arrive once the endpoint recovers', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  r.answer = () => ({ status: 503 });
  const webhook = await webhookFor(d.db, agencyId, r.url, ['payment.paid']);
  const events = Array.from({ length: 30 }, () => makeEvent('payment.paid'));
  for (const event of events) await d.publish(agencyId, event);

  const mine = () => d.outcomes.filter((o) => o.webhookId === webhook.id);
  await waitFor(
    () =>
      mine().filter((o) => o.outcome.kind === 'deferred' && o.outcome.reason === 'circuit_open').length >= 10,
    { what: 'deliveries short-circuited by the open breaker' },
  );
  // The breaker spared the endpoint most of those: far fewer requests than deliveries so far.
  expect(r.requests.length).toBeLessThan(mine().length);

  r.answer = () => ({ status: 200 });
  await waitFor(async () => (await succeededEventIds(webhook.id)).size === events.length, {
    timeoutMs: 20_000,
    what: 'every event delivered after recovery',
  });
  expect(mine().some((o) => o.outcome.kind === 'dropped' || o.outcome.kind === 'gave_up')).toBe(false);
  // Deferring is not an attempt: only attempts that were made are in the log.
  const logged = await d.db
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('webhook_id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  expect(Number(logged.n)).toBe(r.requests.length);
});

test('at most the cap of attempts is in flight to one endpoint; the excess is deferred and still delivered', async () => {
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
  // Fan-out made 2 first attempts with 2 more waiting and queued the rest of the burst rather than
  // hold their events; from the deliveries queue, the excess went round the retry path.
  expect(mine.filter((o) => o.outcome.kind === 'queued').length).toBeGreaterThanOrEqual(events.length - 4);
  expect(
    mine.filter((o) => o.outcome.kind === 'deferred' && o.outcome.reason === 'endpoint_busy').length,
  ).toBeGreaterThan(0);
  // Neither queuing nor deferring is an attempt: every event got through on its first.
  expect(await attemptNumbers(webhook.id)).toEqual(events.map(() => 1));
});

test('deliveries put off again and again by a slow endpoint back off, and all arrive on their first attempt', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  r.answer = () => ({ status: 200, delayMs: 1_500 }); // slow, within the 2 s WEBHOOK_TIMEOUT
  const webhook = await webhookFor(d.db, agencyId, r.url, ['trip.updated']);
  const events = Array.from({ length: 10 }, () => makeEvent('trip.updated'));
  for (const event of events) await d.publish(agencyId, event);

  const deferredDelays = (eventId: string) =>
    d.outcomes
      .filter((o) => o.webhookId === webhook.id && o.eventId === eventId)
      .flatMap((o) => (o.outcome.kind === 'deferred' ? [o.outcome.delayMs] : []));
  await waitFor(() => events.some((e) => deferredDelays(e.id).length >= 3), {
    what: 'a delivery put off three times',
  });
  r.answer = () => ({ status: 200 });
  await waitFor(async () => (await succeededEventIds(webhook.id)).size === events.length, {
    timeoutMs: 20_000,
    what: 'every event delivered',
  });
  // Each delivery's deferrals wait 300 ms, then 600 ms from then on; a fixed delay would repeat 300.
  for (const event of events) {
    const delays = deferredDelays(event.id);
    expect(delays).toEqual(delays.map((_, i) => (i === 0 ? 300 : 600)));
  }
  expect(await attemptNumbers(webhook.id)).toEqual(events.map(() => 1));
});
