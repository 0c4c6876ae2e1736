import type { AttemptResult } from '../src/sender.ts';
import { Endpoints, type GuardedResult } from '../src/endpoints.ts';

// Per-endpoint protection (endpoints.ts), on its own: two slots, an endpoint slower than 100 ms
// refuses inline attempts, and a breaker that opens after 4 attempts mostly failing and lets a
// trial through after 300 ms.
let endpoints: Endpoints;
let roomFor: string[];

beforeEach(() => {
  endpoints = new Endpoints({
    concurrency: 2,
    inlineMaxMs: 100,
    breaker: { errorThresholdPercentage: 50, volumeThreshold: 4, rollingWindowMs: 10_000, cooldownMs: 300 },
  });
  roomFor = [];
  endpoints.onRoom((webhookId) => roomFor.push(webhookId));
});

afterEach(() => endpoints.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const result = (error: AttemptResult['error'] = null): AttemptResult => ({
  at: new Date(),
  durationMs: 0,
  statusCode: error ? 503 : 200,
  error,
  body: null,
});

const answeringIn =
  (ms: number, error: AttemptResult['error'] = null) =>
  async () => {
    await sleep(ms);
    return result(error);
  };

const deferred = (r: GuardedResult) => ('deferred' in r ? r.deferred : undefined);

test('an attempt starts at once or is refused at once: no caller waits for a slot', async () => {
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  const running = [endpoints.run('whk_1', () => hung, true), endpoints.run('whk_1', () => hung, false)];
  expect(endpoints.room('whk_1')).toBe(0);

  const started = performance.now();
  expect(deferred(await endpoints.run('whk_1', answeringIn(0), true))).toBe('endpoint_busy');
  expect(deferred(await endpoints.run('whk_1', answeringIn(0), false))).toBe('endpoint_busy');
  expect(performance.now() - started).toBeLessThan(50);
  // Another webhook is not affected.
  expect('attempted' in (await endpoints.run('whk_2', answeringIn(0), true))).toBe(true);

  release();
  await Promise.all(running);
  expect(endpoints.room('whk_1')).toBe(2);
  // Each ended attempt tells the lanes there is room.
  expect(roomFor.filter((id) => id === 'whk_1')).toHaveLength(2);
});

test('a slow endpoint refuses inline attempts (a message would wait on them) but not lane attempts', async () => {
  await Promise.all([endpoints.run('whk_slow', answeringIn(200), true)]);
  expect(deferred(await endpoints.run('whk_slow', answeringIn(0), true))).toBe('endpoint_slow');
  expect('attempted' in (await endpoints.run('whk_slow', answeringIn(0), false))).toBe(true);
  // Unmeasured endpoints and fast ones take inline attempts.
  expect('attempted' in (await endpoints.run('whk_new', answeringIn(0), true))).toBe(true);
});

test('an open breaker refuses everything and leaves no room; after its cooldown one trial, then room again', async () => {
  for (let i = 0; i < 4; i++) await endpoints.run('whk_dead', answeringIn(0, 'connection_refused'), false);
  expect(endpoints.isOpen('whk_dead')).toBe(true);
  expect(endpoints.room('whk_dead')).toBe(0);
  expect(deferred(await endpoints.run('whk_dead', answeringIn(0), false))).toBe('circuit_open');

  await sleep(400);
  expect(roomFor).toContain('whk_dead'); // told when the trial became due
  expect(endpoints.isOpen('whk_dead')).toBe(false);
  expect(endpoints.isTrial('whk_dead')).toBe(true);
  expect(endpoints.room('whk_dead')).toBe(1);
  const trial = endpoints.run('whk_dead', answeringIn(50), false);
  expect(endpoints.room('whk_dead')).toBe(0);
  expect(deferred(await endpoints.run('whk_dead', answeringIn(0), false))).toBe('circuit_open');
  expect('attempted' in (await trial)).toBe(true);
  expect(endpoints.isTrial('whk_dead')).toBe(false);
  expect(endpoints.room('whk_dead')).toBe(2);
});
