import { METHODS } from 'node:http';
import { connect } from 'node:net';
import { assertValid, openapiDocument } from '@trips/contracts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

// The edges a fuzz run found (issue 26, item 9): ids with control characters, methods Express never
// sees, the 401's challenge and an empty cursor.

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

interface RawAnswer {
  statusLine: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `text` as it is and reads what comes back until the server closes the connection. */
function sendRaw(text: string): Promise<RawAnswer> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => socket.write(text));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('close', () => {
      const [head = '', ...rest] = answer.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => {
          const [name = '', value = ''] = line.split(/: (.*)/s);
          return [name.toLowerCase(), value];
        }),
      );
      resolve({ statusLine, status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.on('error', reject);
  });
}

const request = (method: string, target: string, extra = '') =>
  `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${own.key}\r\n${extra}Connection: close\r\n\r\n`;

describe('an id holding a control character is refused as a bad parameter', () => {
  const ids = ['%00', 'trp_%00', 'trp_x%00y', '%01', 'trp_%1F', '%7F', '%0A', '%0D%0A', '%09', '%1B%5B0m'];
  const routes = ['trips', 'payments', 'contacts'];

  test.each(routes)(
    'GET and HEAD /api/v1/%s/{id}: 400 invalid_request naming id, never a 500',
    async (route) => {
      for (const id of ids) {
        const res = await client(api.url, own.key)(`/api/v1/${route}/${id}`);
        expect([id, res.status, res.body.error?.code, res.body.error?.param]).toEqual([
          id,
          400,
          'invalid_request',
          'id',
        ]);
        assertValid('Error', res.body);
        const head = await client(api.url, own.key)(`/api/v1/${route}/${id}`, { method: 'HEAD' });
        expect([id, head.status]).toEqual([id, 400]);
      }
    },
  );

  test.each(routes)('every other method on /api/v1/%s/{id} answers as for any id: 405', async (route) => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      for (const id of ['trp_unknown', ...ids]) {
        const res = await client(api.url, own.key)(`/api/v1/${route}/${id}`, { method });
        expect([method, id, res.status, res.body.error?.code]).toEqual([
          method,
          id,
          405,
          'method_not_allowed',
        ]);
      }
    }
  });

  test('after the checks D1 ranks before it: a key without the scope is still a 403', async () => {
    const narrow = await agencyWithKey(t.db, ['events:read']);
    const res = await client(api.url, narrow.key)('/api/v1/trips/trp_%00%1B%5B31m');
    expect([res.status, res.body.error.code]).toEqual([403, 'insufficient_scope']);
  });
});

describe('every method Node parses gets a D1 answer with a Request-Id, never a closed socket', () => {
  // CONNECT takes an authority, not a path; every other method is tried on a known and an unknown path.
  const cases = [
    ...METHODS.filter((m) => m !== 'CONNECT').flatMap((m) => [
      [m, '/api/v1/trips/trp_x'],
      [m, '/nowhere'],
    ]),
    ['CONNECT', 'localhost:443'],
    ['CONNECT', '/api/v1/trips'],
  ];

  test.each(cases)('%s %s', async (method, target) => {
    const res = await sendRaw(request(method, target));
    expect(res.statusLine).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(res.headers['request-id']).toMatch(/^req_[A-Za-z0-9_-]{16}$/);
    if (method === 'GET' && target === '/api/v1/trips/trp_x') return expect(res.status).toBe(404);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.headers['content-type']).toBe('application/json');
    if (method === 'HEAD') return;
    const body = JSON.parse(res.body);
    assertValid('Error', body);
    expect(body.error.request_id).toBe(res.headers['request-id']);
  });

  test('CONNECT is 405 method_not_allowed naming the methods that are', async () => {
    const res = await sendRaw(request('CONNECT', 'example.com:443'));
    expect(res.status).toBe(405);
    expect(JSON.parse(res.body).error.code).toBe('method_not_allowed');
    expect(res.headers.allow).toBe('GET, HEAD');
  });

  test('a request asking to upgrade the connection is answered as if it had not asked', async () => {
    const res = await sendRaw(
      request('GET', '/api/v1/trips/trp_x', 'Upgrade: websocket\r\nConnection: Upgrade\r\n'),
    );
    expect(res.status).toBe(404);
    expect(res.headers['request-id']).toMatch(/^req_/);
  });

  test('the server still answers afterwards', async () => {
    expect((await client(api.url)('/healthz')).status).toBe(200);
  });
});

describe('a 401 names its scheme (RFC 6750)', () => {
  test('without a key: WWW-Authenticate: Bearer, with no error code', async () => {
    const res = await client(api.url)('/api/v1/trips');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api"');
  });

  test.each([
    ['a malformed key', 'Bearer nope'],
    ['an unknown key', `Bearer tps_${'x'.repeat(32)}`],
  ])('with %s: Bearer with error="invalid_token"', async (_what, authorization) => {
    const res = await client(api.url)('/api/v1/trips', { headers: { authorization } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api", error="invalid_token"');
  });

  test('another scheme offers no bearer token: the bare challenge', async () => {
    const res = await client(api.url)('/api/v1/trips', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api"');
  });

  test('a revoked key is an invalid token too', async () => {
    const fixture = await agencyWithKey(t.db);
    await t.db
      .updateTable('api_keys')
      .set({ revoked_at: new Date() })
      .where('id', '=', fixture.keyId)
      .execute();
    const res = await client(api.url, fixture.key)('/api/v1/trips');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="api", error="invalid_token"$/);
  });

  test('a 403 carries no challenge', async () => {
    const fixture = await agencyWithKey(t.db, ['payments:read']);
    const res = await client(api.url, fixture.key)('/api/v1/trips');
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toBeNull();
  });

  test('the OpenAPI document says the 401 carries WWW-Authenticate: Bearer', () => {
    const unauthorized = openapiDocument.components.responses!.Unauthorized!;
    expect(Object.keys(unauthorized.headers ?? {})).toContain('WWW-Authenticate');
    const header = openapiDocument.components.headers!['WWW-Authenticate']!;
    expect(header.description).toMatch(/Bearer/);
    expect(header.required).toBe(true);
  });
});

// GET /events?after= (empty) is in events.test.ts, where a recorder makes the events.
describe('an empty cursor is the same as none', () => {
  test('GET /trips?cursor= lists from the first page, as without cursor', async () => {
    const fixture = await agencyWithKey(t.db);
    await insertTrip(t.db, fixture.agencyId);
    await insertTrip(t.db, fixture.agencyId);
    const trips = client(api.url, fixture.key);
    const absent = await trips('/api/v1/trips?limit=1');
    const empty = await trips('/api/v1/trips?limit=1&cursor=');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual(absent.body);
  });

  test('the OpenAPI document says so', () => {
    const after = openapiDocument.components.parameters!.After!;
    expect(after.description).toMatch(/empty/i);
    expect(after.schema).not.toHaveProperty('minLength');
  });
});
