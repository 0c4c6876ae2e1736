import http from 'node:http';
import fc from 'fast-check';
import { isValid, openapiDocument } from '@trips/contracts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;
let tripId: string;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
  tripId = (await insertTrip(t.db, own.agencyId)).id;
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const printable = fc.string({
  unit: fc.constantFrom(...'abcXYZ019_-.~!$&\'()*+,;=:@/%?#[]{}|\\^`"<> '.split('')),
  maxLength: 40,
});
const percentJunk = fc.constantFrom('%', '%0', '%zz', '%00', '%E0%A4%A', '%C0%AF', '%2e%2e%2f', '%ff', '%25');
/** NUL and the other control characters, escaped: Node's client refuses them raw in a path. */
const controlCharacter = fc
  .integer({ min: 0, max: 0x20 })
  .map((code) => (code === 0x20 ? '%7F' : `%${code.toString(16).toUpperCase().padStart(2, '0')}`));
/** An id with control characters somewhere in it, as a by-id route receives it. */
const controlId = fc
  .tuple(
    fc.constantFrom('', 'trp_', 'pay_', 'con_x'),
    fc.array(controlCharacter, { minLength: 1, maxLength: 3 }),
    fc.constantFrom('', 'x', '%41'),
  )
  .map(([prefix, controls, suffix]) => prefix + controls.join('') + suffix);
const segment = fc.oneof(
  printable,
  percentJunk,
  controlId,
  fc.constantFrom('trips', 'payments', 'contacts', 'events', 'trp_x', '..', '.'),
);

const path = fc
  .tuple(
    fc.constantFrom(
      '/api/v1/',
      '/api/v1/trips/',
      '/api/v1/trips',
      '/api/',
      '/',
      '/docs/',
      '/api/v1/events',
      '/api/v1/openapi.json',
      '/healthz',
    ),
    fc.array(segment, { maxLength: 4 }),
  )
  .map(([prefix, parts]) => encodeUnsafe(prefix + parts.join('/')));

/** Straight at the by-id routes, where an id would reach the database. */
const byIdPath = fc
  .tuple(fc.constantFrom('/api/v1/trips/', '/api/v1/payments/', '/api/v1/contacts/'), controlId)
  .map(([prefix, id]) => prefix + id);

const query = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'limit',
        '',
        'cursor',
        'updated_since',
        'after',
        'types',
        'x',
        'limit[]',
        'limit[a]',
        '__proto__',
        'constructor',
      ),
      fc.oneof(
        printable,
        percentJunk,
        fc.integer().map(String),
        fc.constantFrom(
          '',
          '9'.repeat(400),
          '2026-13-45T99:99:99Z',
          '2026-01-01T00:00:00-23:59',
          '2026-11-21t10:15:30.1234567z',
        ),
      ),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => (pairs.length ? '?' + pairs.map(([k, v]) => `${k}=${encodeUnsafe(v)}`).join('&') : ''));

const authorization = fc.oneof(
  fc.constant(undefined),
  fc.constant('VALID'),
  fc.constant('VALID_WITH_JUNK'),
  printable.map((s) => `Bearer ${s}`),
  fc
    .string({ unit: fc.constantFrom(...'abcdefABCDEF0123456789'.split('')), minLength: 0, maxLength: 80 })
    .map((s) => `Bearer tps_${s}`),
  printable,
);

const method = fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH');

/** Node's client refuses control characters and spaces in a path; anything else goes raw. */
function encodeUnsafe(text: string): string {
  return text.replace(/[\s"<>\\^`{|}]/g, (c) => encodeURIComponent(c));
}

/** Each documented GET operation's path as Express matches it, and the statuses it documents. */
const documented = Object.entries(openapiDocument.paths ?? {}).map(([template, item]) => ({
  pattern: new RegExp(`^${template.replaceAll('.', '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
  statuses: new Set(Object.keys(item.get?.responses ?? {})),
}));
/** What the OpenAPI document says a GET or HEAD request can answer, if it reaches a documented path. */
function documentedStatuses(method: string, path: string): Set<string> | undefined {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  const pathname = path.split(/[?#]/)[0]!;
  return documented.find((op) => op.pattern.test(pathname))?.statuses;
}

function send(
  request: { method: string; path: string; authorization: string | undefined },
  agent: http.Agent,
) {
  const headers: Record<string, string> = {};
  if (request.authorization === 'VALID') headers.authorization = `Bearer ${own.key}`;
  else if (request.authorization === 'VALID_WITH_JUNK') headers.authorization = `Bearer ${own.key}x`;
  else if (request.authorization !== undefined) headers.authorization = request.authorization;
  const url = new URL(api.url);
  return new Promise<{ status: number; body: string; type: string | undefined }>((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: request.method, path: request.path, headers, agent },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body, type: res.headers['content-type'] }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('10,000 generated malformed requests: no 500, every error in the D1 shape, the process stays up', async () => {
  const requests = fc.sample(
    fc.record({
      method,
      path: fc.oneof(
        fc.tuple(path, query).map(([p, q]) => p + q),
        byIdPath,
      ),
      authorization,
    }),
    { numRuns: 10_000, seed: 20261121 },
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++]!;
      const res = await send(request, agent);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500) failures.push(`${res.status} ${request.method} ${request.path}`);
      const allowed = documentedStatuses(request.method, request.path);
      if (allowed && !allowed.has(String(res.status)))
        failures.push(`undocumented ${res.status} for ${request.method} ${request.path}`);
      if (res.status >= 400 && res.type !== 'application/json')
        failures.push(`Content-Type ${res.type} for ${res.status} ${request.method} ${request.path}`);
      if (res.status >= 400 && request.method !== 'HEAD') {
        let body: unknown;
        try {
          body = JSON.parse(res.body);
        } catch {
          failures.push(`non-JSON ${res.status} for ${request.method} ${request.path}`);
        }
        if (body !== undefined && !isValid('Error', body))
          failures.push(`bad error body for ${request.path}: ${res.body}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  agent.destroy();
  expect(failures.slice(0, 10)).toEqual([]);
  // The generator really did reach the interesting answers, not just 401s.
  for (const status of [200, 400, 401, 404, 405]) expect(statuses.get(status) ?? 0).toBeGreaterThan(0);
  // And ids with a NUL reached a by-id route with a valid key many times.
  const nulLookups = requests.filter(
    (r) => r.method === 'GET' && r.authorization === 'VALID' && /^\/api\/v1\/\w+\/[^/?]*%00/.test(r.path),
  );
  expect(nulLookups.length).toBeGreaterThan(20);
  const health = await client(api.url)('/healthz');
  expect(health.status).toBe(200);
  expect((await client(api.url, own.key)(`/api/v1/trips/${tripId}`)).status).toBe(200);
}, 120_000);
