import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { assertValid } from '@trips/contracts';
import { createApiKey } from '@trips/db/api-keys';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { PostgresBuckets, RedisBuckets, type SharedBuckets } from '../src/rate-limit/token-bucket.ts';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let own: Fixture;
let tripId: string;

beforeAll(async () => {
  t = await createTestDatabase();
  own = await agencyWithKey(t.db);
  tripId = (await insertTrip(t.db, own.agencyId)).id;
});
afterAll(() => t.drop());

// One token a second, the slowest rate there is: each burst below is sent at once, so it is over in
// milliseconds and its counts are exact even on a busy machine, where requests one after another
// can take over a second together (a token back).
const TIGHT = { RATE_LIMIT_BURST: '3', RATE_LIMIT_PER_SECOND: '1' };

describe.each(['redis', 'postgres'])('the %s token bucket', (store) => {
  let api: Awaited<ReturnType<typeof startTestApi>>;
  beforeAll(async () => {
    api = await startTestApi(t, { ...TIGHT, RATE_LIMIT_STORE: store });
  });
  afterAll(() => api.stop());

  test('allows the burst, then 429 rate_limited with Retry-After; headers on every response', async () => {
    const { key } = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
    const get = client(api.url, key);
    const responses = await Promise.all(Array.from({ length: 5 }, () => get(`/api/v1/trips/${tripId}`)));
    for (const res of responses) {
      expect(res.headers.get('ratelimit-limit')).toBe('3');
      expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(0);
      if (res.status === 429) {
        assertValid('Error', res.body);
        expect(res.body.error.code).toBe('rate_limited');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
    }
    expect(responses.map((res) => res.status).sort()).toEqual([200, 200, 200, 429, 429]);
    const remaining = responses
      .filter((res) => res.status === 200)
      .map((res) => res.headers.get('ratelimit-remaining'));
    expect(remaining.sort()).toEqual(['0', '1', '2']);
    // Tokens come back at the configured rate: within about one second here.
    await waitFor(async () => (await get(`/api/v1/trips/${tripId}`)).status === 200, {
      timeoutMs: 3_000,
      what: 'refill',
    });
  });

  test('D1 order: a limited key still gets 403 for a missing scope, and 429 before 400 and 404', async () => {
    const { key } = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
    const get = client(api.url, key);
    // The bucket emptied at once, then each check at once too.
    await Promise.all(Array.from({ length: 3 }, () => get(`/api/v1/trips/${tripId}`)));
    const paths = [
      '/api/v1/payments/pay_x',
      // A malformed escape in the id too: Express fails to decode it while matching the route.
      '/api/v1/payments/%E0%A4%A',
      '/api/v1/trips/%E0%A4%A',
      '/api/v1/trips?limit=0',
      '/api/v1/trips/trp_missing',
      '/api/v1/no-such-path',
    ];
    const codes = (await Promise.all(paths.map((path) => get(path)))).map((res) => res.body.error?.code);
    // The scope is checked before the bucket: those two are refused for it, the rest for the rate.
    expect(codes).toEqual([
      'insufficient_scope',
      'insufficient_scope',
      'rate_limited',
      'rate_limited',
      'rate_limited',
      'rate_limited',
    ]);
  });

  test('each key has its own bucket', async () => {
    const first = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
    const second = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
    const burst = await Promise.all(
      Array.from({ length: 4 }, () => client(api.url, first.key)(`/api/v1/trips/${tripId}`)),
    );
    expect(burst.map((res) => res.status).sort()).toEqual([200, 200, 200, 429]);
    expect((await client(api.url, second.key)(`/api/v1/trips/${tripId}`)).status).toBe(200);
  });
});

test('when Redis is unreachable requests go through without RateLimit headers (fail open)', async () => {
  const api = await startTestApi(t, { ...TIGHT, REDIS_URL: 'redis://127.0.0.1:1' });
  try {
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      const res = await client(api.url, own.key)(`/api/v1/trips/${tripId}`);
      statuses.push(res.status);
      expect(res.headers.get('ratelimit-limit')).toBeNull();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    // It started all the same, after a short wait for the store, and said so.
    expect(api.logs.text()).toMatch(/rate limit store unreachable at start/);
    expect(api.logs.text()).toMatch(/rate limit store unreachable: letting requests through/);
  } finally {
    await api.stop();
  }
});

test('a new replica connects to Redis before it listens, so its first request is limited too', async () => {
  // Redis behind a proxy that holds each new connection for 150 ms before passing anything on,
  // as a slow network or a busy Redis would: the API must not answer before it can limit. (Not
  // longer than the store's 250 ms command timeout, which its connection handshake obeys too.)
  const redis = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const proxy = createServer({ pauseOnConnect: true }, (socket) => {
    setTimeout(() => {
      const upstream = connect(Number(redis.port || 6379), redis.hostname);
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
      socket.pipe(upstream).pipe(socket);
    }, 150);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  const { key } = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
  const api = await startTestApi(t, { ...TIGHT, REDIS_URL: `redis://127.0.0.1:${port}` });
  try {
    const first = await client(api.url, key)(`/api/v1/trips/${tripId}`);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('3');
    expect(first.headers.get('ratelimit-remaining')).toBe('2');
  } finally {
    await api.stop();
    proxy.close();
  }
});

// Through real HTTP, two separate processes. A burst of 10 is leased a token at a time (exact
// counts); a burst of 200 is leased up to 20 tokens at a time, which must not let more through.
describe.each([
  { burst: 10, requests: 20, concurrency: 1 },
  { burst: 200, requests: 600, concurrency: 8 },
])('two API processes share one limit (D3), burst $burst', ({ burst, requests, concurrency }) => {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const children: ChildProcess[] = [];
  const urls: string[] = [];

  async function freePort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    return port;
  }

  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const child = spawn(process.execPath, [main], {
        env: {
          ...process.env,
          DATABASE_URL: t.url,
          PORT: String(port),
          API_METRICS_PORT: '0',
          RATE_LIMIT_BURST: String(burst),
          RATE_LIMIT_PER_SECOND: '1',
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(child);
      urls.push(`http://127.0.0.1:${port}`);
    }
    for (const url of urls) {
      await waitFor(async () => (await fetch(`${url}/healthz`)).ok, { timeoutMs: 15_000, what: `${url} up` });
    }
  });
  afterAll(async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            child.once('exit', (code) => {
              expect(code).toBe(0); // SIGTERM is a clean, graceful stop
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
  });

  test(`${requests} requests alternating between the replicas: ${burst} pass in all, not ${burst} each`, async () => {
    const { key } = await createApiKey(t.db, { agencyId: own.agencyId, scopes: ['trips:read'] });
    const byReplica = [0, 0];
    const started = Date.now();
    let sent = 0;
    // `concurrency` requests in flight at any time, each sent to the replica after the previous.
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < requests) {
          const replica = sent++ % 2;
          const res = await client(urls[replica]!, key)(`/api/v1/trips/${tripId}`);
          if (res.status === 200) byReplica[replica]!++;
          else expect(res.status).toBe(429);
        }
      }),
    );
    const passed = byReplica[0]! + byReplica[1]!;
    // The burst, plus at most one token refilled for each second the loop took.
    expect(passed).toBeGreaterThanOrEqual(burst);
    expect(passed).toBeLessThanOrEqual(burst + Math.ceil((Date.now() - started) / 1000));
    expect(byReplica[0]).toBeGreaterThan(0);
    expect(byReplica[1]).toBeGreaterThan(0);
  });
});

describe.each(['redis', 'postgres'])('the shared %s buckets', (store) => {
  // No refill to speak of, so every count below is exact.
  const policy = { perSecond: 0.001, burst: 100 };
  let buckets: SharedBuckets;
  beforeAll(async () => {
    buckets =
      store === 'redis'
        ? new RedisBuckets(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', policy)
        : new PostgresBuckets(t.db, policy);
    // Redis connects in the background and queues nothing meanwhile (by design: fail fast).
    expect(await buckets.ready(5_000)).toBe(true);
  });
  afterAll(() => buckets.close());

  test('concurrent leases of 1 to 5 tokens are granted exactly the bucket, no more', async () => {
    const keyId = `key_test_${randomUUID()}`;
    const leases = await Promise.all(
      Array.from({ length: 60 }, (_, i) => buckets.lease(keyId, 1 + (i % 5), 0)),
    );
    expect(leases.reduce((sum, lease) => sum + lease.granted, 0)).toBe(100);
    expect(leases.some((lease) => lease.granted === 0)).toBe(true);
    // A lease granted in part takes what was left: nothing is stranded below the ask.
    expect(Math.max(...leases.map((lease) => lease.left))).toBeLessThan(100);
  });

  test('tokens given back are there for the next lease, and never fill it past the burst', async () => {
    const keyId = `key_test_${randomUUID()}`;
    expect((await buckets.lease(keyId, 100, 0)).granted).toBe(100);
    expect((await buckets.lease(keyId, 1, 0)).granted).toBe(0);
    expect((await buckets.lease(keyId, 0, 30)).granted).toBe(0);
    expect((await buckets.lease(keyId, 50, 0)).granted).toBe(30);
    await buckets.lease(keyId, 0, 1_000);
    expect((await buckets.lease(keyId, 100, 0)).left).toBeLessThan(1);
  });
});
