import type { AttemptResult } from '../src/sender.ts';
import { Endpoints, type EndpointProtection, type GuardedResult } from '../src/endpoint/endpoints.ts';
import { LANE_TURN_EVERY } from '../src/endpoint/slots.ts';

// Per-endpoint protection (endpoints.ts), on its own: two slots, an endpoint slower than 100 ms
// refuses inline attempts, an inline caller waits for a slot 150 ms at most, and a breaker that
// opens after 4 attempts mostly failing and lets a trial through after 300 ms. A new endpoint has
// one slot until it has answered (slow start): tests of full slots let it answer once first.
let endpoints: Endpoints;
let roomFor: string[];
/** Told of room besides `roomFor` (a test standing in for the lane). */
let onRoom: (webhookId: string) => void;

/** A webhook without an owner's limit, not paused. */
const UNPACED = { rate_limit: null, paused_until: null };
const PACE = { backoffMs: 1_000, maxBackoffMs: 30_000, maxPauseMs: 60_000 };

/** Endpoints whose room is told to `roomFor`; no owner's limit applies, so no send time is reserved. */
const endpointsWith = (protection: Omit<EndpointProtection, 'pace'>) =>
  new Endpoints(
    { ...protection, pace: PACE },
    {
      reserveSendTimes: () => Promise.reject(new Error('no owner limit in these tests')),
      onRoom: (webhookId) => {
        roomFor.push(webhookId);
        onRoom(webhookId);
      },
    },
  );

beforeEach(() => {
  roomFor = [];
  onRoom = () => {};
  endpoints = endpointsWith({
    concurrency: 2,
    inlineMaxMs: 100,
    inlineWaitMs: 150,
    breaker: { errorThresholdPercentage: 50, volumeThreshold: 4, rollingWindowMs: 10_000, cooldownMs: 300 },
  });
});

afterEach(() => endpoints.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const result = (error: AttemptResult['error'] = null): AttemptResult => ({
  at: new Date(),
  durationMs: 0,
  statusCode: error ? 500 : 200,
  error,
  body: null,
});

const answeringIn =
  (ms: number, error: AttemptResult['error'] = null) =>
  async () => {
    await sleep(ms);
    return result(error);
  };

const trickled = async (): Promise<AttemptResult> => ({ ...result(), bodyCut: true });

const deferred = (r: GuardedResult) => ('deferred' in r ? r.deferred : undefined);

/** One answered attempt: the endpoint's slots are all open from then on (with two, 2 ** 1). */
const answeredOnce = async (webhookId: string) => {
  await endpoints.run(webhookId, UNPACED, answeringIn(0), false);
  roomFor = [];
};

test('a new endpoint gets one attempt at a time, twice as many with each answer, up to its slots; no answer opens none', async () => {
  const wide = endpointsWith({
    concurrency: 8,
    inlineMaxMs: 1_000,
    inlineWaitMs: 0,
    breaker: { errorThresholdPercentage: 50, volumeThreshold: 100, rollingWindowMs: 10_000, cooldownMs: 300 },
  });
  try {
    const hung: (() => void)[] = [];
    const hanging = () => new Promise<AttemptResult>((resolve) => hung.push(() => resolve(result())));
    /** Starts attempts until one is refused; answers how many started. */
    const fill = async (webhookId: string) => {
      const running: Promise<GuardedResult>[] = [];
      for (;;) {
        const attempt = wide.run(webhookId, UNPACED, hanging, false);
        const settled = await Promise.race([attempt, sleep(10).then(() => undefined)]);
        if (settled && deferred(settled) === 'endpoint_busy') return running;
        running.push(attempt);
      }
    };
    const answerAll = async (running: Promise<GuardedResult>[]) => {
      for (const answer of hung.splice(0)) answer();
      await Promise.all(running);
    };

    expect(wide.room('whk_new')).toBe(1);
    for (const slots of [1, 2, 8]) {
      const running = await fill('whk_new');
      expect(running).toHaveLength(slots);
      await answerAll(running);
    }
    // 11 answers: the cap, no more.
    expect(wide.room('whk_new')).toBe(8);

    // An attempt that ends without an answer (a timeout, a refused connection) opens nothing.
    await wide.run('whk_silent', UNPACED, async () => ({ ...result('timeout'), statusCode: null }), false);
    expect(wide.room('whk_silent')).toBe(1);
  } finally {
    wide.close();
  }
});

test('a lane attempt starts at once or is refused at once: it never waits for a slot', async () => {
  await answeredOnce('whk_1');
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  const running = [
    endpoints.run('whk_1', UNPACED, () => hung, true),
    endpoints.run('whk_1', UNPACED, () => hung, false),
  ];
  expect(endpoints.room('whk_1')).toBe(0);

  const started = performance.now();
  expect(deferred(await endpoints.run('whk_1', UNPACED, answeringIn(0), false))).toBe('endpoint_busy');
  expect(performance.now() - started).toBeLessThan(50);
  // Another webhook is not affected.
  expect('attempted' in (await endpoints.run('whk_2', UNPACED, answeringIn(0), true))).toBe(true);

  release();
  await Promise.all(running);
  expect(endpoints.room('whk_1')).toBe(2);
  // Each ended attempt tells the lanes there is room.
  expect(roomFor.filter((id) => id === 'whk_1')).toHaveLength(2);
});

test('inline callers wait for a busy endpoint, in order; freed slots go to the line first, one in LANE_TURN_EVERY to the lane', async () => {
  await endpoints.run('whk_1', UNPACED, answeringIn(20), true); // measured: 20 ms an attempt
  const started: string[] = [];
  const releases: (() => void)[] = [];
  const running: Promise<GuardedResult>[] = [];
  const held = (who: string) => () => {
    started.push(who);
    return new Promise<AttemptResult>((resolve) => releases.push(() => resolve(result())));
  };
  // The lane starts a delivery whenever it hears of room, as long as it has some ready.
  let laneReady = 0;
  onRoom = (webhookId) => {
    if (webhookId !== 'whk_1' || laneReady === 0 || endpoints.room(webhookId) === 0) return;
    laneReady--;
    running.push(endpoints.run(webhookId, UNPACED, held('lane'), false));
  };
  running.push(
    endpoints.run('whk_1', UNPACED, held('slot'), false),
    endpoints.run('whk_1', UNPACED, held('slot'), false),
  );
  const inLine = LANE_TURN_EVERY + 1;
  const line = Array.from({ length: inLine }, (_, i) =>
    endpoints.run('whk_1', UNPACED, held(`line ${i + 1}`), true),
  );
  laneReady = 2;
  const lineNames = (from: number, to: number) =>
    Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);
  for (let i = 0; i < inLine + 1; i++) {
    releases[i]!();
    await sleep(5);
  }
  expect(started).toEqual([
    'slot',
    'slot',
    ...lineNames(1, LANE_TURN_EVERY - 1),
    'lane',
    ...lineNames(LANE_TURN_EVERY, inLine),
  ]);
  // The line is empty: the next freed slot is the lane's.
  releases[inLine + 1]!();
  await sleep(5);
  expect(started.at(-1)).toBe('lane');
  for (const release of releases) release();
  const lined = await Promise.all(line);
  const ran = await Promise.all(running);
  expect([...lined, ...ran].every((o) => 'attempted' in o)).toBe(true);
  // Each caller of the line says how long it waited (the metrics' line wait), the first the least;
  // those that found a slot free did not wait.
  expect(lined.every((o) => o.lineWaitMs! > 0)).toBe(true);
  expect(lined[0]!.lineWaitMs).toBeLessThan(lined.at(-1)!.lineWaitMs!);
  expect(ran.map((o) => o.lineWaitMs)).toEqual(running.map(() => undefined));
  expect(endpoints.room('whk_1')).toBe(2);
});

test('an inline caller waits its longest, then is refused and leaves the line', async () => {
  await answeredOnce('whk_1');
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  const slots = [
    endpoints.run('whk_1', UNPACED, () => hung, true),
    endpoints.run('whk_1', UNPACED, () => hung, true),
  ];
  const started = performance.now();
  const refused = await endpoints.run('whk_1', UNPACED, answeringIn(0), true);
  expect(deferred(refused)).toBe('endpoint_busy');
  expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  expect(refused.lineWaitMs).toBeGreaterThanOrEqual(140);
  release();
  await Promise.all(slots);
  expect(endpoints.room('whk_1')).toBe(2);
});

test('a new endpoint whose first attempt has been out longer than the inline wait has no line', async () => {
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  // Unanswered, a new endpoint has one slot: this attempt takes it.
  const first = endpoints.run('whk_new', UNPACED, () => hung, true);
  await sleep(160);
  const started = performance.now();
  expect(deferred(await endpoints.run('whk_new', UNPACED, answeringIn(0), true))).toBe('endpoint_busy');
  expect(performance.now() - started).toBeLessThan(50);
  release();
  await first;
});

test('an endpoint whose every attempt has been out longer than the inline wait has no line', async () => {
  await answeredOnce('whk_1'); // fast until now: two slots
  let release!: () => void;
  const hung = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  const slots = [
    endpoints.run('whk_1', UNPACED, () => hung, true),
    endpoints.run('whk_1', UNPACED, () => hung, true),
  ];
  await sleep(160);
  const started = performance.now();
  expect(deferred(await endpoints.run('whk_1', UNPACED, answeringIn(0), true))).toBe('endpoint_busy');
  expect(performance.now() - started).toBeLessThan(50);
  release();
  await Promise.all(slots);
  expect(endpoints.room('whk_1')).toBe(2);
});

test('an inline caller is refused at once when the line would not clear in time', async () => {
  // 60 ms an attempt: two slots serve 5 waiting callers within 150 ms; a 6th is refused at once.
  await endpoints.run('whk_1', UNPACED, answeringIn(60), true);
  const slots = [
    endpoints.run('whk_1', UNPACED, answeringIn(60), false),
    endpoints.run('whk_1', UNPACED, answeringIn(60), false),
  ];
  const line = [1, 2, 3, 4, 5].map(() => endpoints.run('whk_1', UNPACED, answeringIn(0), true));
  const started = performance.now();
  expect(deferred(await endpoints.run('whk_1', UNPACED, answeringIn(0), true))).toBe('endpoint_busy');
  expect(performance.now() - started).toBeLessThan(20);
  await Promise.all([...slots, ...line]);
});

test('a slow endpoint refuses inline attempts (a message would wait on them) but not lane attempts', async () => {
  await Promise.all([endpoints.run('whk_slow', UNPACED, answeringIn(200), true)]);
  expect(deferred(await endpoints.run('whk_slow', UNPACED, answeringIn(0), true))).toBe('endpoint_slow');
  expect('attempted' in (await endpoints.run('whk_slow', UNPACED, answeringIn(0), false))).toBe(true);
  // Unmeasured endpoints and fast ones take inline attempts.
  expect('attempted' in (await endpoints.run('whk_new', UNPACED, answeringIn(0), true))).toBe(true);
});

test('an open breaker refuses everything and leaves no room; after its cooldown one trial, then room again', async () => {
  for (let i = 0; i < 4; i++)
    await endpoints.run('whk_dead', UNPACED, answeringIn(0, 'connection_refused'), false);
  expect(endpoints.isOpen('whk_dead')).toBe(true);
  expect(endpoints.room('whk_dead')).toBe(0);
  expect(deferred(await endpoints.run('whk_dead', UNPACED, answeringIn(0), false))).toBe('circuit_open');

  await sleep(400);
  expect(roomFor).toContain('whk_dead'); // told when the trial became due
  expect(endpoints.isOpen('whk_dead')).toBe(false);
  expect(endpoints.isTrial('whk_dead')).toBe(true);
  expect(endpoints.room('whk_dead')).toBe(1);
  const trial = endpoints.run('whk_dead', UNPACED, answeringIn(50), false);
  expect(endpoints.room('whk_dead')).toBe(0);
  expect(deferred(await endpoints.run('whk_dead', UNPACED, answeringIn(0), false))).toBe('circuit_open');
  expect('attempted' in (await trial)).toBe(true);
  expect(endpoints.isTrial('whk_dead')).toBe(false);
  expect(endpoints.room('whk_dead')).toBe(2);
});

test('an endpoint whose answers trickle gets one slot, until an answer arrives whole again', async () => {
  await endpoints.run('whk_1', UNPACED, trickled, false);
  expect(endpoints.room('whk_1')).toBe(1);
  let release!: () => void;
  const held = new Promise<AttemptResult>((resolve) => (release = () => resolve(result())));
  const one = endpoints.run('whk_1', UNPACED, () => held, false);
  expect(endpoints.room('whk_1')).toBe(0);
  expect(deferred(await endpoints.run('whk_1', UNPACED, answeringIn(0), false))).toBe('endpoint_busy');
  release();
  await one;
  expect(endpoints.room('whk_1')).toBe(2);
});
