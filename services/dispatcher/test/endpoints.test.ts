import type { AttemptResult } from '../src/delivery.ts';
import { Endpoints, type GuardedResult } from '../src/endpoints.ts';

// The per-endpoint line (endpoints.ts), on its own: two slots, and a delivery may wait for one
// while its turn is expected within a second.
const MAX_WAIT_MS = 1_000;
let endpoints: Endpoints;

beforeEach(() => {
  endpoints = new Endpoints({
    concurrency: 2,
    maxWaitMs: MAX_WAIT_MS,
    // A breaker that stays out of the way: these tests are about the line.
    breaker: {
      errorThresholdPercentage: 50,
      volumeThreshold: 1_000,
      rollingWindowMs: 10_000,
      cooldownMs: 1_000,
    },
  });
});

afterEach(() => endpoints.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const answered = (): AttemptResult => ({
  at: new Date(),
  durationMs: 0,
  statusCode: 200,
  error: null,
  body: null,
});

/** An endpoint that answers every attempt after `ms`, counting how many it holds at once. */
function endpointAnsweringIn(ms: number) {
  const stats = { inFlight: 0, maxInFlight: 0 };
  const send = async () => {
    stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
    await sleep(ms);
    stats.inFlight--;
    return answered();
  };
  return { send, stats };
}

/** Two attempts through `send`, so the webhook's attempt duration is measured. */
const measure = (webhookId: string, send: () => Promise<AttemptResult>) =>
  Promise.all([endpoints.run(webhookId, send, 'fan_out'), endpoints.run(webhookId, send, 'fan_out')]);

/** Both of the webhook's slots taken by attempts that answer only once released. */
function hangBothSlots(webhookId: string) {
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(answered())));
  const attempts = [
    endpoints.run(webhookId, () => hung, 'fan_out'),
    endpoints.run(webhookId, () => hung, 'fan_out'),
  ];
  return { attempts, release };
}

const busy = (results: GuardedResult[]) =>
  results.filter((r) => 'deferred' in r && r.deferred === 'endpoint_busy').length;

test('a burst waits its turn, at an endpoint known to answer quickly and at one not yet measured', async () => {
  const { send, stats } = endpointAnsweringIn(20);
  const burst = (webhookId: string) =>
    Promise.all(Array.from({ length: 40 }, () => endpoints.run(webhookId, send, 'fan_out')));

  // Unmeasured, just after its slots filled: a turn is not yet overdue, so all wait (the floor
  // alone would have put 36 off), and at a turn every 10 ms the 40th is through within the second.
  expect(busy(await burst('whk_cold'))).toBe(0);
  expect(stats.maxInFlight).toBe(2);

  // Measured at about 20 ms an attempt: a turn every 10 ms, the 40th within half a second.
  await measure('whk_warm', send);
  stats.maxInFlight = 0;
  const results = await burst('whk_warm');
  expect(busy(results)).toBe(0);
  expect(results.every((r) => 'attempted' in r)).toBe(true);
  expect(stats.maxInFlight).toBe(2);
});

test('at an endpoint not yet measured that hangs, only the floor waits once its slots have been full a while', async () => {
  const hanging = hangBothSlots('whk_new');
  await sleep(600);
  const results = Array.from({ length: 10 }, () =>
    endpoints.run('whk_new', async () => answered(), 'fan_out'),
  );
  const settled: GuardedResult[] = [];
  for (const r of results) void r.then((x) => settled.push(x));
  await sleep(100);
  // 8 put off at once, the floor's 2 waiting.
  expect(busy(settled)).toBe(8);
  hanging.release();
  await Promise.all([...hanging.attempts, ...results]);
});

test('at a hanging endpoint only the floor waits, and no one longer than the longest wait', async () => {
  const { send } = endpointAnsweringIn(5);
  await measure('whk_1', send);
  // Measured fast, then it hangs: both slots held, none freed for 600 ms, so a turn is due no
  // sooner than every 600 ms and no place beyond the floor is within the second.
  const hanging = hangBothSlots('whk_1');
  await sleep(600);

  const started = performance.now();
  const settledAfter: number[] = [];
  const track = (p: Promise<GuardedResult>) =>
    p.then((r) => {
      settledAfter.push(performance.now() - started);
      return r;
    });
  const fromEvents = Array.from({ length: 10 }, () => track(endpoints.run('whk_1', send, 'fan_out')));
  // The queued deliveries have a floor of their own, which the events' line does not take.
  const fromQueue = Array.from({ length: 3 }, () => track(endpoints.run('whk_1', send, 'deliveries_queue')));
  await sleep(100);
  // 8 + 1 put off at once: the running mean alone (5 ms an attempt) would have let all 13 wait.
  expect(settledAfter.length).toBe(9);

  const results = await Promise.all([...fromEvents, ...fromQueue]);
  expect(busy(results)).toBe(13);
  // The 4 that waited left the line after the longest wait, not after the hang.
  const waited = settledAfter.slice(9);
  expect(Math.min(...waited)).toBeGreaterThanOrEqual(MAX_WAIT_MS - 20);
  expect(Math.max(...waited)).toBeLessThan(MAX_WAIT_MS + 500);

  hanging.release();
  expect((await Promise.all(hanging.attempts)).every((r) => 'attempted' in r)).toBe(true);
});
