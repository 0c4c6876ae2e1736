import { sql } from 'kysely';
import {
  createTestCa,
  mostInOneSecond,
  startReceiver,
  waitFor,
  type Answer,
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

/** How late an attempt begun before a dispatcher heard of a pause may still arrive. */
const ON_ITS_WAY_MS = 250;

// The receiver sets the pace (D10): a 429 or 503 pauses the webhook for its Retry-After (seconds, an
// HTTP date, or a short backoff without one), the refused delivery waits in its lane until then off
// the retry schedule (a pause up to DISPATCHER_LANE_PAUSE_MAX; a longer one is a failure on it),
// and the webhook's rate drops. Seconds instead of minutes: a pause in the lane up to 2 s, retries
// after 1 s, a window long enough that nothing gives up unless a test wants it to.
let ca: TestCa;
let d: TestDispatcher;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  ca = await createTestCa();
  d = await startTestDispatcher({
    WEBHOOK_CA_FILE: ca.caFile,
    WEBHOOK_RETRY_DELAYS: '1s',
    WEBHOOK_FAILURE_WINDOW: '1m',
    DISPATCHER_LANE_PAUSE_MAX: '2s',
    DISPATCHER_PAUSE_BACKOFF: '500ms',
    DISPATCHER_LANE_SCAN_INTERVAL: '200ms',
  });
});

afterAll(async () => {
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function webhookOn(answer: (request: { at: number }, index: number) => Answer) {
  const receiver = await startReceiver(ca);
  receivers.push(receiver);
  receiver.answer = (request) => answer(request, receiver.requests.length - 1);
  const { agencyId } = await agencyWithOwners(d.db);
  const webhook = await webhookFor(d.db, agencyId, receiver.url);
  return { receiver, agencyId, webhookId: webhook.id };
}

const attemptsOf = (webhookId: string) =>
  d.db
    .selectFrom('webhook_attempts')
    .select(['event_id', 'attempt', 'status_code', 'attempted_at', 'next_attempt_at', 'succeeded'])
    .where('webhook_id', '=', webhookId)
    .orderBy('id')
    .execute();

const deliveredIds = async (webhookId: string) =>
  (await attemptsOf(webhookId)).filter((a) => a.succeeded).map((a) => a.event_id);

/** Waits until each event has exactly one 2xx attempt (and none has two). */
async function allDeliveredOnce(webhookId: string, eventIds: string[], timeoutMs = 15_000) {
  await waitFor(async () => (await deliveredIds(webhookId)).length >= eventIds.length, {
    timeoutMs,
    what: `${eventIds.length} deliveries to ${webhookId}`,
  });
  expect((await deliveredIds(webhookId)).sort()).toEqual([...eventIds].sort());
}

async function publishAll(agencyId: string, count: number): Promise<string[]> {
  const events = Array.from({ length: count }, () => makeEvent('trip.created'));
  for (const event of events) await d.publish(agencyId, event);
  return events.map((e) => e.id);
}

test('a 429 with Retry-After pauses the webhook: nothing is sent before it ends, and the refused delivery then arrives, off the retry schedule', async () => {
  const { receiver, agencyId, webhookId } = await webhookOn((_, i) =>
    i === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 },
  );
  const ids = await publishAll(agencyId, 5);
  await allDeliveredOnce(webhookId, ids);

  const [refused, ...after] = receiver.requests;
  // No request at all before the pause asked for ended.
  for (const request of after) expect(request.at - refused!.at).toBeGreaterThanOrEqual(1_000);
  const attempts = await attemptsOf(webhookId);
  const first = attempts.find((a) => a.status_code === 429)!;
  const again = attempts.find((a) => a.event_id === first.event_id && a.succeeded)!;
  // Logged as an attempt, with when it was due again: when the pause ended.
  expect(first.attempt).toBe(1);
  expect(again.attempt).toBe(2);
  expect(first.next_attempt_at!.getTime() - first.attempted_at.getTime()).toBeGreaterThanOrEqual(1_000);
  expect(first.next_attempt_at!.getTime() - first.attempted_at.getTime()).toBeLessThan(1_500);
  expect(again.attempted_at.getTime()).toBeGreaterThanOrEqual(first.next_attempt_at!.getTime() - 5);
  // The pause is shared with every dispatcher, and says why.
  const pace = await d.db
    .selectFrom('webhook_pace')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .executeTakeFirstOrThrow();
  expect(pace).toMatchObject({ pause_status: 429, pause_retry_after_ms: 1_000 });
  expect(d.outcomes.filter((o) => o.webhookId === webhookId).map((o) => o.outcome.kind)).toContain(
    'asked_to_wait',
  );
  const logged = d.logs.lines.map((line) => JSON.parse(line) as { msg: string; webhookId?: string });
  expect(logged).toContainEqual(
    expect.objectContaining({ msg: 'asked to wait: 429, Retry-After 1 s', webhookId }),
  );
  // It is a failure for the switch-off streak like any other answer that is not 2xx (D10): the
  // streak began, and the 2xx after the pause ended it.
  const webhook = await d.db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', webhookId)
    .executeTakeFirstOrThrow();
  expect(webhook.last_failure_at).not.toBeNull();
  expect(webhook.failing_since).toBeNull();
});

test('a Retry-After given as an HTTP date is honoured to the second', async () => {
  const date = () => new Date(Math.ceil((Date.now() + 2_000) / 1000) * 1000);
  let until = 0;
  const { receiver, agencyId, webhookId } = await webhookOn((_, i) => {
    if (i > 0) return { status: 200 };
    const at = date();
    until = at.getTime();
    return { status: 503, headers: { 'retry-after': at.toUTCString() } };
  });
  const ids = await publishAll(agencyId, 3);
  await allDeliveredOnce(webhookId, ids);
  for (const request of receiver.requests.slice(1)) expect(request.at).toBeGreaterThanOrEqual(until - 5);
});

test('a Retry-After that does not parse counts as none: a short backoff, doubled while such answers come in a row', async () => {
  const { receiver, agencyId, webhookId } = await webhookOn((_, i) =>
    i < 2 ? { status: 429, headers: { 'retry-after': 'soon, maybe' } } : { status: 200 },
  );
  const ids = await publishAll(agencyId, 1);
  await allDeliveredOnce(webhookId, ids);
  const [first, second, third] = receiver.requests.map((r) => r.at);
  // DISPATCHER_PAUSE_BACKOFF 500ms, then twice that.
  expect(second! - first!).toBeGreaterThanOrEqual(500);
  expect(second! - first!).toBeLessThan(900);
  expect(third! - second!).toBeGreaterThanOrEqual(1_000);
  const pace = await d.db
    .selectFrom('webhook_pace')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .executeTakeFirstOrThrow();
  expect(pace.pause_retry_after_ms).toBeNull();
});

test('a pause longer than DISPATCHER_LANE_PAUSE_MAX is a failure on the retry schedule, never retried sooner than the receiver asked', async () => {
  const { receiver, agencyId, webhookId } = await webhookOn((_, i) =>
    i === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 },
  );
  const ids = await publishAll(agencyId, 1);
  await allDeliveredOnce(webhookId, ids);
  const [refused, retried] = receiver.requests;
  // The schedule's first delay is 1 s; the receiver asked for 3.
  expect(retried!.at - refused!.at).toBeGreaterThanOrEqual(3_000);
  const [first] = await attemptsOf(webhookId);
  expect(first!.next_attempt_at!.getTime() - first!.attempted_at.getTime()).toBeGreaterThanOrEqual(3_000);
  expect(d.outcomes.find((o) => o.webhookId === webhookId)?.outcome.kind).toBe('retry_scheduled');
});

test('every dispatcher holds off: a pause one of them was asked for stops the other too', async () => {
  const other = await startTestDispatcher(
    { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_RETRY_DELAYS: '1s', WEBHOOK_FAILURE_WINDOW: '1m' },
    {},
    d,
  );
  try {
    const { receiver, agencyId, webhookId } = await webhookOn((_, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    const ids = await publishAll(agencyId, 20);
    await allDeliveredOnce(webhookId, ids);
    const [refused, ...after] = receiver.requests;
    // The other one heard of the pause soon after the refusal (through Postgres' notification: within
    // milliseconds here, 210 ms with the cores busy)...
    const heard = other.targetsEvents.find(
      ({ event }) =>
        typeof event === 'object' && event.webhookId === webhookId && event.pausedForMs !== undefined,
    );
    expect(heard).toBeDefined();
    expect(heard!.at - refused!.at).toBeLessThan(1_000);
    // ...and from then on sent nothing until the pause ended. An attempt already on its way when
    // it heard cannot be called back, and on a busy machine one begun just before (by either
    // dispatcher) can take a couple of hundred milliseconds to arrive; without the pause shared,
    // the other sends all through the 2 s.
    const early = after.filter((r) => r.at > heard!.at + ON_ITS_WAY_MS && r.at - refused!.at < 1_990);
    expect(early.map((r) => r.at - refused!.at)).toEqual([]);
    // Both took part.
    const handledBy = (t: TestDispatcher) => t.outcomes.filter((o) => o.webhookId === webhookId).length;
    expect(handledBy(d)).toBeGreaterThan(0);
    expect(handledBy(other)).toBeGreaterThan(0);
  } finally {
    await other.cleanup();
  }
});

test('the pace drops to what the receiver takes: a rate-limited receiver gets everything with few refusals', async () => {
  // A receiver behind a rate limiter: 20 a second (a token bucket holding 5), the rest 429.
  const rate = 20;
  let tokens = 5;
  let filledAt = Date.now();
  const { receiver, agencyId, webhookId } = await webhookOn(({ at }) => {
    tokens = Math.min(5, tokens + ((at - filledAt) * rate) / 1000);
    filledAt = at;
    if (tokens < 1) return { status: 429, headers: { 'retry-after': '1' } };
    tokens--;
    return { status: 200 };
  });
  const started = Date.now();
  const ids = await publishAll(agencyId, 100);
  await allDeliveredOnce(webhookId, ids, 30_000);
  const refused = receiver.requests.length - ids.length;
  // Without a pace, every slot keeps sending into the limiter: hundreds of refusals.
  expect(refused).toBeLessThanOrEqual(20);
  // bench:pace's bound (N / R × 1.2 s + 5 s), with half as much again for a machine busy with other
  // test files: a pace that never settled would take several times as long.
  expect(Date.now() - started).toBeLessThan(((100 / rate) * 1.2 * 1000 + 5_000) * 1.5);
});

test("the owner's rate limit holds across two dispatchers: no second holds more than a tenth over it", async () => {
  const other = await startTestDispatcher(
    { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_RETRY_DELAYS: '1s', WEBHOOK_FAILURE_WINDOW: '1m' },
    {},
    d,
  );
  try {
    const { receiver, agencyId, webhookId } = await webhookOn(() => ({ status: 200 }));
    await d.changeHeard(agencyId, () =>
      d.db.updateTable('webhooks').set({ rate_limit: 10 }).where('id', '=', webhookId).execute(),
    );
    await waitFor(() => other.targetsEvents.length > 0, { what: 'the second dispatcher listening' });
    const ids = await publishAll(agencyId, 40);
    await allDeliveredOnce(webhookId, ids);
    // The limit governs when attempts begin, by both dispatchers together: spaced 1/N s apart, each
    // begun at most a twentieth of a second late, so no second holds more than N × 1.1. Arrival
    // times add each request's transit, which a loaded machine stretches by hundreds of ms (a TLS
    // handshake waiting for a core), so they are not counted here: bench:pace counts arrivals per
    // second on a quiet machine.
    const started = (await attemptsOf(webhookId)).map((a) => a.attempted_at.getTime());
    expect(mostInOneSecond(started)).toBeLessThanOrEqual(11);
    // 40 at 10 a second: no sooner than the limit allows (the first may have begun its 50 ms late).
    expect(Math.max(...started) - Math.min(...started)).toBeGreaterThanOrEqual(3_900 - 50);
    expect(receiver.requests).toHaveLength(40);
    const handledBy = (t: TestDispatcher) => t.outcomes.filter((o) => o.webhookId === webhookId).length;
    expect(handledBy(d) + handledBy(other)).toBeGreaterThanOrEqual(40);
    const row = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM webhook_pace WHERE webhook_id = ${webhookId} AND next_send_at IS NOT NULL`.execute(
      d.db,
    );
    expect(row.rows[0]!.n).toBe(1);
  } finally {
    await other.cleanup();
  }
});
