import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { assertValid } from '@trips/contracts';
import { createDb } from '@trips/db';
import { adminUrl, createTestDatabase, LogCapture, type TestDatabase } from '@trips/testkit';
import { createApp } from '../src/app.ts';
import { CredentialsCache } from '../src/auth/credentials-cache.ts';
import type { TokenBucketStore } from '../src/rate-limit/token-bucket.ts';
import { agencyWithKey, client, startTestApi, type Fixture } from './support.ts';
import { EventCursors } from '../src/routes/event-cursors.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

test.each([
  ['/api/v1/unknown', 'an unknown resource'],
  ['/api/v1/trips/trp_1/extra', 'a path under a resource'],
  ['/api/v2/trips', 'another version'],
  ['/nothing-here', 'a path outside the API'],
])('%s (%s) is 404 not_found in the D1 body', async (path) => {
  const res = await client(api.url, own.key)(path);
  expect(res.status).toBe(404);
  assertValid('Error', res.body);
  expect(res.body.error.code).toBe('not_found');
});

test('an unknown path under /api/v1 without a key is 401: authentication ranks first (D1)', async () => {
  const res = await client(api.url)('/api/v1/unknown');
  expect(res.status).toBe(401);
});

test.each(['POST', 'PUT', 'PATCH', 'DELETE'])(
  '%s on a known path is 405 method_not_allowed',
  async (method) => {
    const res = await client(api.url, own.key)('/api/v1/trips', { method });
    expect(res.status).toBe(405);
    assertValid('Error', res.body);
    expect(res.body.error.code).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  },
);

test('every response carries Request-Id, equal to the body request_id on errors', async () => {
  const responses = await Promise.all(
    ['/healthz', '/api/v1/trips', '/api/v1/nope', '/readyz'].map((p) => client(api.url, own.key)(p)),
  );
  const ids = responses.map((r) => r.headers.get('request-id'));
  for (const id of ids) expect(id).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
  expect(new Set(ids).size).toBe(ids.length);
  expect(responses[2]!.body.error.request_id).toBe(ids[2]);
});

test.each(['%E0%A4%A', '%zz', 'trp_%', '%C0%AF'])(
  'an id with a malformed escape (%s) is an id like any other: 404, never a 400 or a 500',
  async (id) => {
    const res = await client(api.url, own.key)(`/api/v1/trips/${id}`);
    expect(res.status).toBe(404);
    assertValid('Error', res.body);
    expect(res.body.error.message).toBe(`No trip '${id}' in this agency.`);
    // And it keeps its place in D1's order (rate-limit.test.ts has the 429).
    const unscoped = await agencyWithKey(t.db, ['payments:read']);
    const forbidden = await client(api.url, unscoped.key)(`/api/v1/trips/${id}`);
    expect(forbidden.body.error.code).toBe('insufficient_scope');
    expect((await client(api.url, own.key)(`/api/v1/trips/${id}`, { method: 'POST' })).status).toBe(405);
  },
);

test('a query parameter without a name is 400 invalid_request, in the Error schema', async () => {
  const res = await client(api.url, own.key)('/api/v1/trips?=x');
  expect(res.status).toBe(400);
  assertValid('Error', res.body);
  expect(res.body.error.code).toBe('invalid_request');
  expect(res.body.error).not.toHaveProperty('param');
});

test.each([
  ['/api/v1/openapi.json', 'the OpenAPI document'],
  ['/docs', 'the reference page'],
  ['/healthz', 'liveness'],
  ['/readyz', 'readiness'],
])('another method on %s (%s) is 405 with Allow, key or none', async (path) => {
  for (const key of [undefined, own.key]) {
    const res = await client(api.url, key)(path, { method: 'POST' });
    expect(res.status).toBe(405);
    assertValid('Error', res.body);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  }
});

/** Sends `text` as it is and reads what comes back until the server closes the connection. */
function sendRaw(text: string): Promise<string> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(text));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

test.each([
  ['a header line without a colon', 'GET /api/v1/trips HTTP/1.1\r\nHost: x\r\nNot a header\r\n\r\n'],
  [
    'headers over the size limit',
    `GET /api/v1/trips HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
  ],
  ['not HTTP at all', 'HELLO THERE\r\n\r\n'],
])(
  '%s: 400 invalid_request in the D1 body with its Request-Id, not a bare answer from Node',
  async (_what, text) => {
    const answer = await sendRaw(text);
    const [head, body] = answer.split('\r\n\r\n') as [string, string];
    const [statusLine, ...lines] = head.split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => line.split(/: (.*)/s).slice(0, 2) as [string, string]),
    );
    expect(statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(headers['Content-Type']).toBe('application/json');
    expect(headers['Content-Length']).toBe(String(Buffer.byteLength(body)));
    const parsed = JSON.parse(body);
    assertValid('Error', parsed);
    expect(parsed.error.code).toBe('invalid_request');
    expect(headers['Request-Id']).toBe(parsed.error.request_id);
  },
);

test('/healthz checks nothing outside the process; /readyz checks Postgres', async () => {
  expect((await client(api.url)('/healthz')).body).toEqual({ status: 'ok' });
  expect((await client(api.url)('/readyz')).status).toBe(200);
});

/** The API on `db`, with a credentials cache that asks it, as the API's own does; answers its URL. */
async function apiOn(
  db: ReturnType<typeof createDb>,
  logs: LogCapture,
): Promise<{ url: string; server: Server }> {
  const noLimit: TokenBucketStore = {
    take: async () => ({ allowed: true, limit: 1, remaining: 1, resetSeconds: 0, retryAfterSeconds: 1 }),
    close: async () => {},
  };
  const credentials = new CredentialsCache(async () => {
    await db.selectFrom('api_keys').selectAll().execute();
    return undefined;
  }, 1000);
  const app = createApp({
    db,
    logger: logs.logger,
    credentials,
    onKeyUsed: () => {},
    rateLimits: noLimit,
    eventRetentionMs: 86_400_000,
    eventCursors: new EventCursors(randomBytes(32)),
  });
  const server = app.listen(0);
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('when Postgres is unreachable', () => {
  const logs = new LogCapture();
  const db = createDb('postgres://postgres@127.0.0.1:1/nowhere_db_host_secret', { max: 1 });
  let url: string;
  let server: Server;
  beforeAll(async () => {
    ({ url, server } = await apiOn(db, logs));
  });
  afterAll(async () => {
    server.close();
    await db.destroy();
  });

  test('a request answers 503 service_unavailable with Retry-After, leaking nothing, and one line is logged', async () => {
    const answers = await Promise.all([1, 2, 3].map(() => client(url, own.key)('/api/v1/trips/trp_x')));
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      assertValid('Error', res.body);
      expect(res.body.error.code).toBe('service_unavailable');
      expect(res.text).not.toMatch(
        /ECONNREFUSED|127\.0\.0\.1|nowhere|secret|postgres|at .*\.ts|stack|select/i,
      );
    }
    expect(logs.text().match(/database unavailable: answering 503/g)).toHaveLength(1);
  });

  test('/readyz says unavailable with 503 while /healthz stays 200', async () => {
    expect((await client(url)('/readyz')).status).toBe(503);
    expect((await client(url)('/healthz')).status).toBe(200);
  });
});

test('a failure that is not the database being away answers a bare 500 internal_error, logged', async () => {
  // A database without the API's tables: every query fails, but the server answers.
  const logs = new LogCapture();
  const db = createDb(adminUrl, { max: 1 });
  const { url, server } = await apiOn(db, logs);
  try {
    const res = await client(url, own.key)('/api/v1/trips/trp_x');
    expect(res.status).toBe(500);
    expect(res.headers.get('retry-after')).toBeNull();
    assertValid('Error', res.body);
    expect(res.body.error.code).toBe('internal_error');
    expect(res.text).not.toMatch(/api_keys|relation|postgres|at .*\.ts|stack|select/i);
    expect(logs.text()).toMatch(/unhandled error/);
  } finally {
    server.close();
    await db.destroy();
  }
});

test('the OpenAPI document is public and describes every read endpoint', async () => {
  const res = await client(api.url)('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.body.openapi).toMatch(/^3\.1\./);
  for (const path of ['/api/v1/trips/{id}', '/api/v1/trips', '/api/v1/payments/{id}', '/api/v1/contacts']) {
    expect(Object.keys(res.body.paths)).toContain(path);
  }
});

test('/docs is a human-readable reference page of every endpoint', async () => {
  const res = await client(api.url)('/docs');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  for (const path of ['/api/v1/trips/{id}', '/api/v1/events', '/api/v1/contacts'])
    expect(res.text).toContain(path);
});
