import { createServer } from 'node:net';
import { createTestCa, startReceiver, waitFor, type TestCa, type TestReceiver } from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// Webhook lanes (lanes.ts): what a webhook cannot take now waits in Postgres, in its own lane, and
// costs nothing while it waits. Each test has its own dispatcher.
let ca: TestCa;
const receivers: TestReceiver[] = [];
const dispatchers: TestDispatcher[] = [];

beforeAll(async () => {
  ca = await createTestCa();
});

afterAll(async () => {
  for (const d of dispatchers) await d.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

async function dispatcher(...args: Parameters<typeof startTestDispatcher>): Promise<TestDispatcher> {
  const d = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile, ...args[0] }, args[1]);
  dispatchers.push(d);
  return d;
}

/** A loopback port nothing listens on: connections to it are refused. */
async function deadPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const heldIds = async (d: TestDispatcher, webhookId: string) =>
  (await d.db.selectFrom('held_deliveries').select('id').where('webhook_id', '=', webhookId).execute()).map(
    (r) => Number(r.id),
  );
const heldCount = async (d: TestDispatcher, webhookId: string) => (await heldIds(d, webhookId)).length;
const attempts = (d: TestDispatcher, webhookId: string) =>
  d.db
    .selectFrom('webhook_attempts')
    .select(['event_id', 'attempt', 'attempted_at', 'succeeded'])
    .where('webhook_id', '=', webhookId)
    .orderBy('id')
    .execute();
const receivedIds = (r: TestReceiver) =>
  new Set(r.requests.map((q) => String(q.headers['service-event-id'])));

test("a dead endpoint's backlog waits in its lane at no cost, then arrives whole once it answers", async () => {
  const d = await dispatcher({
    WEBHOOK_RETRY_DELAYS: '2s,4s',
    WEBHOOK_FAILURE_WINDOW: '5m',
    DISPATCHER_BREAKER_COOLDOWN: '2s',
    DISPATCHER_LANE_SCAN_INTERVAL: '200ms',
    LOG_LEVEL: 'info',
  });
  const { agencyId } = await agencyWithOwners(d.db);
  const webhook = await webhookFor(d.db, agencyId, `https://127.0.0.1:${await deadPort()}/hooks`, [
    'trip.created',
  ]);
  const events = Array.from({ length: 150 }, () => makeEvent('trip.created'));
  for (const event of events) await d.publish(agencyId, event);
  await waitFor(async () => (await heldCount(d, webhook.id)) >= 130, {
    what: 'the backlog held behind the open breaker',
  });

  // Six seconds of a dead endpoint with a backlog: a trial every cooldown, the first failures'
  // retries coming back to wait in the lane, and nothing else. Before lanes, every delivery behind
  // the open breaker went round a delay queue each first-retry delay: 400 and more in this window.
  const outcomesBefore = d.outcomes.length;
  const logLinesBefore = d.logs.lines.length;
  const attemptsBefore = (await attempts(d, webhook.id)).length;
  await sleep(6_000);
  const outcomes = d.outcomes.slice(outcomesBefore).filter((o) => o.webhookId === webhook.id);
  expect(outcomes.length).toBeLessThan(60);
  expect((await attempts(d, webhook.id)).length - attemptsBefore).toBeLessThanOrEqual(8);
  const infoLines = d.logs.lines.slice(logLinesBefore).filter((l) => !l.includes('"level":20'));
  expect(infoLines.length).toBeLessThan(20);
  expect(outcomes.every((o) => o.outcome.kind !== 'dropped' && o.outcome.kind !== 'gave_up')).toBe(true);

  // The endpoint answers again (the owner fixed the URL): the next trial closes the breaker and the
  // lane drains, every event delivered, nothing left held.
  const r = await receiver();
  await d.db.updateTable('webhooks').set({ url: r.url }).where('id', '=', webhook.id).execute();
  await waitFor(() => events.every((e) => receivedIds(r).has(e.id)), {
    timeoutMs: 30_000,
    intervalMs: 200,
    what: 'every event at the endpoint once it answers',
  });
  await waitFor(async () => (await heldCount(d, webhook.id)) === 0, { what: 'an empty lane' });
}, 60_000);

test('a retry the full delay queue refuses waits out its delay in its lane, then goes out', async () => {
  const d = await dispatcher(
    { WEBHOOK_RETRY_DELAYS: '2s', WEBHOOK_FAILURE_WINDOW: '5m', DISPATCHER_LANE_SCAN_INTERVAL: '200ms' },
    {
      queueLimits: { events: 200, retry: 2 },
      // A breaker out of the way: this is about the delay queue.
      protection: {
        breaker: {
          errorThresholdPercentage: 50,
          volumeThreshold: 1_000,
          rollingWindowMs: 10_000,
          cooldownMs: 1_000,
        },
      },
    },
  );
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  let failing = true;
  r.answer = () => ({ status: failing ? 500 : 200 });
  const webhook = await webhookFor(d.db, agencyId, r.url, ['payment.paid']);
  const events = Array.from({ length: 8 }, () => makeEvent('payment.paid'));
  // In two waves: a quorum queue takes a burst that arrives while it is under its bound whole, and
  // tells the publishing channel it is full only after that, so the first wave's retries fill the
  // delay queue past its bound of 2 and the second's (within the first's 2 s delay) are refused and
  // go to the lane with their due time.
  for (const wave of [events.slice(0, 4), events.slice(4)]) {
    for (const event of wave) await d.publish(agencyId, event);
    const failed = events.indexOf(wave.at(-1)!) + 1;
    await waitFor(async () => (await attempts(d, webhook.id)).length === failed, {
      what: `the first attempts of ${failed} events failed`,
    });
  }
  await waitFor(async () => (await heldCount(d, webhook.id)) >= 1, { what: 'the refused retries held' });
  failing = false;
  await waitFor(
    async () => (await attempts(d, webhook.id)).filter((a) => a.succeeded).length === events.length,
    {
      timeoutMs: 15_000,
      what: 'every retry delivered',
    },
  );
  const log = await attempts(d, webhook.id);
  for (const event of events) {
    const [first, second] = log.filter((a) => a.event_id === event.id);
    expect([first!.attempt, second!.attempt]).toEqual([1, 2]);
    // Not before its delay, whichever way it waited.
    expect(second!.attempted_at.getTime() - first!.attempted_at.getTime()).toBeGreaterThanOrEqual(1_900);
  }
  expect(await heldCount(d, webhook.id)).toBe(0);
}, 60_000);

test('a switch-off empties the lane of the webhook switched off', async () => {
  const d = await dispatcher({
    WEBHOOK_RETRY_DELAYS: '1s',
    WEBHOOK_FAILURE_WINDOW: '4s',
    DISPATCHER_BREAKER_COOLDOWN: '3s',
  });
  const { agencyId } = await agencyWithOwners(d.db);
  const webhook = await webhookFor(d.db, agencyId, `https://127.0.0.1:${await deadPort()}/hooks`, [
    'contact.created',
  ]);
  for (let i = 0; i < 40; i++) await d.publish(agencyId, makeEvent('contact.created'));
  await waitFor(async () => (await heldCount(d, webhook.id)) > 0, { what: 'deliveries held' });
  const heldBefore = Math.max(...(await heldIds(d, webhook.id)));
  await waitFor(
    async () =>
      (
        await d.db
          .selectFrom('webhooks')
          .select('disabled_at')
          .where('id', '=', webhook.id)
          .executeTakeFirstOrThrow()
      ).disabled_at !== null,
    { timeoutMs: 15_000, what: 'the switch-off' },
  );
  // Emptied in the switch-off's transaction: nothing held before it is left. (A retry whose
  // webhook was read just before the switch-off may still be held just after it; the lane drops it
  // at its next claim, and it is never attempted.)
  expect((await heldIds(d, webhook.id)).filter((id) => id <= heldBefore)).toEqual([]);
}, 30_000);
