// The lease layer of the rate limiter on its own, against an in-memory shared bucket and a clock
// the test moves: exact counts, no timing luck. The real stores are tested in rate-limit.test.ts.
import { LeasedTokenBuckets } from '../src/rate-limit/leases.ts';
import type {
  BucketPolicy,
  RateLimitDecision,
  SharedBuckets,
  SharedLease,
} from '../src/rate-limit/token-bucket.ts';

/** The shared bucket as the Redis script computes it, counting what it hands out. */
class MemoryBuckets implements SharedBuckets {
  visits = 0;
  granted = 0;
  givenBack = 0;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly policy: BucketPolicy;
  private readonly clock: { now: number };

  constructor(policy: BucketPolicy, clock: { now: number }) {
    this.policy = policy;
    this.clock = clock;
  }

  tokens(keyId: string): number {
    const bucket = this.buckets.get(keyId) ?? { tokens: this.policy.burst, at: this.clock.now };
    return Math.min(
      this.policy.burst,
      bucket.tokens + ((this.clock.now - bucket.at) * this.policy.perSecond) / 1000,
    );
  }

  async lease(keyId: string, want: number, giveBack: number): Promise<SharedLease> {
    // A turn of the event loop, as a network round trip would take, so that requests pile up.
    await new Promise((resolve) => setImmediate(resolve));
    this.visits++;
    this.givenBack += giveBack;
    const tokens = Math.min(this.policy.burst, this.tokens(keyId) + giveBack);
    const granted = Math.min(want, Math.floor(tokens));
    this.granted += granted;
    this.buckets.set(keyId, { tokens: tokens - granted, at: this.clock.now });
    return { granted, left: tokens - granted };
  }

  async ready(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}

const D3 = { perSecond: 50, burst: 100 };

function setup(policy: BucketPolicy = D3, replicas = 1) {
  const clock = { now: 1_000_000 };
  const shared = new MemoryBuckets(policy, clock);
  const stores = Array.from(
    { length: replicas },
    () => new LeasedTokenBuckets(shared, policy, { now: () => clock.now }),
  );
  return { clock, shared, stores };
}

const stores: LeasedTokenBuckets[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
function track<T extends { stores: LeasedTokenBuckets[] }>(fixture: T): T {
  stores.push(...fixture.stores);
  return fixture;
}

test('one replica: exactly the burst passes, with exact Remaining, in few visits to the shared store', async () => {
  const { shared, stores } = track(setup());
  const decisions: RateLimitDecision[] = [];
  for (let i = 0; i < 101; i++) decisions.push(await stores[0]!.take('key_a'));
  expect(decisions.slice(0, 100).every((d) => d.allowed)).toBe(true);
  expect(decisions[100]!.allowed).toBe(false);
  expect(decisions[100]!.retryAfterSeconds).toBe(1);
  // The clock stood still and one replica spent everything: its estimate is the exact count.
  expect(decisions.map((d) => d.remaining)).toEqual([...Array.from({ length: 100 }, (_, i) => 99 - i), 0]);
  expect(decisions.every((d) => d.limit === 100)).toBe(true);
  // Leases of 1, 2, 4, 8, then 10 at a time (a tenth of the burst), and the refused renewal.
  expect(shared.visits).toBe(4 + Math.ceil((100 - 15) / 10) + 1);
});

test('most takes are decided without waiting: a decision, not a promise', async () => {
  const { stores } = track(setup());
  const results: unknown[] = [];
  for (let i = 0; i < 100; i++) {
    const result = stores[0]!.take('key_a');
    results.push(result);
    await result;
  }
  expect(results.filter((r) => !(r instanceof Promise)).length).toBeGreaterThanOrEqual(85);
});

test('concurrent requests share a renewal and never pass more than the bucket holds', async () => {
  const { shared, stores } = track(setup());
  const decisions = await Promise.all(Array.from({ length: 150 }, () => stores[0]!.take('key_a')));
  expect(decisions.filter((d) => d.allowed).length).toBe(100);
  expect(shared.granted).toBe(100);
  expect(shared.visits).toBeLessThan(60);
});

test('keys have their own buckets', async () => {
  const { stores } = track(setup({ perSecond: 1, burst: 3 }));
  for (let i = 0; i < 3; i++) expect((await stores[0]!.take('key_a')).allowed).toBe(true);
  expect((await stores[0]!.take('key_a')).allowed).toBe(false);
  expect((await stores[0]!.take('key_b')).allowed).toBe(true);
});

test('a small burst is leased one token at a time, so every decision is exact', async () => {
  const { shared, stores } = track(setup({ perSecond: 1, burst: 10 }, 2));
  const remaining: number[] = [];
  for (let i = 0; i < 12; i++) {
    const decision = await stores[i % 2]!.take('key_a');
    if (decision.allowed) remaining.push(decision.remaining);
  }
  expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  expect(shared.visits).toBe(12);
});

test('a key in steady use never waits for the shared store once its lease has grown', async () => {
  const policy = { perSecond: 500, burst: 1_000 }; // leases of up to 100 tokens, 200 ms each
  const { clock, shared, stores } = track(setup(policy));
  const waited: number[] = [];
  for (let i = 0; i < 2_000; i++) {
    const result = stores[0]!.take('key_a');
    if (result instanceof Promise) waited.push(i);
    expect((await result).allowed).toBe(true);
    // 250 requests a second, half the rate; the shared store answers between two requests.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    clock.now += 4;
  }
  expect(Math.max(...waited)).toBeLessThan(10);
  expect(shared.visits).toBeLessThan(2_000 / 20);
});

test('unspent tokens go back to the shared bucket once the lease expires', async () => {
  const { clock, shared, stores } = track(setup({ perSecond: 1, burst: 100 }, 2));
  const [a, b] = stores as [LeasedTokenBuckets, LeasedTokenBuckets];
  let passed = 0;
  for (let i = 0; i < 30; i++) if ((await a.take('key_a')).allowed) passed++;
  await new Promise((resolve) => setImmediate(resolve)); // a renewal ahead of need lands
  expect(passed).toBe(30);
  expect(shared.tokens('key_a')).toBeLessThan(70); // replica A holds some tokens unspent
  clock.now += 1_000; // the lease time for a tenth of the burst at 1/s; 1 token refilled
  await a.sweep();
  expect(shared.givenBack).toBeGreaterThan(0);
  expect(shared.tokens('key_a')).toBe(100 - 30 + 1);
  // Replica B can now spend all of them, and not one more.
  for (let i = 0; i < 120; i++) if ((await b.take('key_a')).allowed) passed++;
  expect(passed).toBe(101);
});

test('an expired lease gives its tokens back with the next renewal', async () => {
  const { clock, shared, stores } = track(setup({ perSecond: 1, burst: 100 }));
  for (let i = 0; i < 30; i++) await stores[0]!.take('key_a');
  await new Promise((resolve) => setImmediate(resolve));
  const held = 100 - 30 - shared.tokens('key_a');
  expect(held).toBeGreaterThan(0);
  clock.now += 1_000;
  await stores[0]!.take('key_a');
  expect(shared.givenBack).toBe(held);
});

test('three replicas under random load for 30 s: never more than the bucket and its refill', async () => {
  const policy = { perSecond: 50, burst: 100 };
  const { clock, shared, stores } = track(setup(policy, 3));
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const start = clock.now;
  let allowed = 0;
  let requests = 0;
  while (clock.now - start < 30_000) {
    // About 150 requests a second in all, three times the rate, spread unevenly over replicas.
    const batch = Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
      const replica = stores[random() < 0.6 ? 0 : random() < 0.7 ? 1 : 2]!;
      return replica.take('key_a');
    });
    for (const decision of await Promise.all(batch)) if (decision.allowed) allowed++;
    requests += batch.length;
    clock.now += Math.floor(random() * 30);
    if (random() < 0.05) await Promise.all(stores.map((s) => s.sweep()));
  }
  const supply = policy.burst + ((clock.now - start) / 1000) * policy.perSecond;
  expect(requests).toBeGreaterThan(3 * supply);
  expect(allowed).toBeLessThanOrEqual(Math.floor(supply));
  expect(shared.granted - shared.givenBack).toBeGreaterThanOrEqual(allowed);
  // Only tokens still held in a lease (at most 10 per replica) or lost to a full bucket go unused.
  expect(allowed).toBeGreaterThanOrEqual(Math.floor(supply) - 3 * 10 - 1);
});
