import http from 'node:http';
import { sql } from 'kysely';
import { assertValid } from '@trips/contracts';
import { updateAgency } from '@trips/db/agencies';
import { createApiKey, revokeApiKey } from '@trips/db/api-keys';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let a: Fixture;
let b: Fixture;
let tripA: string;
let tripB: string;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  a = await agencyWithKey(t.db);
  b = await agencyWithKey(t.db, undefined, {
    name: 'Birdie Travel',
    apiEnabled: true,
    subscriptionStatus: 'trialing',
  });
  tripA = (await insertTrip(t.db, a.agencyId, { title: 'A trip' })).id;
  tripB = (await insertTrip(t.db, b.agencyId, { title: 'B trip' })).id;
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const call = (path: string, headers: Record<string, string> = {}) => client(api.url)(path, { headers });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('401 unauthorized', () => {
  test.each([
    ['no Authorization header', {}],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a malformed key', { authorization: 'Bearer not-a-key' }],
    ['a key that is too short', { authorization: 'Bearer tps_abc' }],
    ['a well-formed key that does not exist', { authorization: `Bearer tps_${'x'.repeat(40)}` }],
  ])('%s', async (_what, headers) => {
    const res = await call(`/api/v1/trips/${tripA}`, headers);
    expect(res.status).toBe(401);
    assertValid('Error', res.body);
    expect(res.body.error.code).toBe('unauthorized');
    expect(res.body.error.request_id).toBe(res.headers.get('request-id'));
  });

  test('a revoked key stops working at once, though the API had it cached', async () => {
    const { key, id } = await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['trips:read'] });
    expect((await call(`/api/v1/trips/${tripA}`, bearer(key))).status).toBe(200);
    await revokeApiKey(t.db, id);
    // The NOTIFY from the trigger clears every replica's cache; no TTL wait (the TTL is 60 s).
    await waitFor(async () => (await call(`/api/v1/trips/${tripA}`, bearer(key))).status === 401, {
      timeoutMs: 2_000,
      what: 'revoked key refused',
    });
  });

  test('the scheme name is case-insensitive', async () => {
    expect((await call(`/api/v1/trips/${tripA}`, { authorization: `bearer ${a.key}` })).status).toBe(200);
  });
});

describe('two Authorization headers', () => {
  /** Raw http: fetch would join the two into one line, `Bearer a, Bearer b`. */
  const twice = (path: string, values: string[]) =>
    new Promise<{ status: number; body: any; requestId: unknown }>((resolve, reject) => {
      const url = new URL(api.url);
      const req = http.request({ host: url.hostname, port: url.port, path }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            body: JSON.parse(text),
            requestId: res.headers['request-id'],
          }),
        );
      });
      req.setHeader('authorization', values); // a line for each
      req.on('error', reject);
      req.end();
    });

  test.each([
    ['a valid key, then another', () => [bearer(a.key).authorization, bearer(b.key).authorization]],
    ['a valid key, then a malformed one', () => [bearer(a.key).authorization, 'Bearer nope']],
    ['a malformed key, then a valid one', () => ['Bearer nope', bearer(a.key).authorization]],
    ['the same key twice', () => [bearer(a.key).authorization, bearer(a.key).authorization]],
  ])('%s: 400 invalid_request naming the header, whichever comes first', async (_what, values) => {
    const res = await twice(`/api/v1/trips/${tripA}`, values());
    expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
      400,
      'invalid_request',
      'Authorization',
    ]);
    assertValid('Error', res.body);
    expect(res.body.error.message).toBe('Send one Authorization header; this request has 2.');
    expect(res.body.error.request_id).toBe(res.requestId);
  });
});

describe('the agency must be enabled and subscribed', () => {
  test('403 api_not_enabled, then 403 subscription_inactive, in D1 order', async () => {
    const c = await agencyWithKey(t.db, ['trips:read'], {
      name: 'C',
      apiEnabled: false,
      subscriptionStatus: 'expired',
    });
    const trip = (await insertTrip(t.db, c.agencyId)).id;
    const get = () => call(`/api/v1/trips/${trip}`, bearer(c.key));
    // Both fail: the first in order answers.
    expect((await get()).body.error.code).toBe('api_not_enabled');
    await updateAgency(t.db, c.agencyId, { apiEnabled: true });
    await waitFor(async () => (await get()).body.error?.code === 'subscription_inactive', {
      what: 'inactive',
    });
    expect((await get()).status).toBe(403);
    await updateAgency(t.db, c.agencyId, {
      subscriptionStatus: 'trialing',
      trialEndsAt: new Date(Date.now() - 1000),
    });
    await waitFor(async () => (await get()).body.error?.code === 'subscription_inactive', {
      what: 'trial over',
    });
    await updateAgency(t.db, c.agencyId, { trialEndsAt: new Date(Date.now() + 86_400_000) });
    await waitFor(async () => (await get()).status === 200, { what: 'trial running' });
  });
});

describe('403 insufficient_scope', () => {
  test.each([
    ['/api/v1/trips/x', 'trips:read'],
    ['/api/v1/trips', 'trips:read'],
    ['/api/v1/payments/x', 'payments:read'],
    ['/api/v1/contacts', 'contacts:read'],
  ])('%s needs %s', async (path, scope) => {
    const { key } = await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['events:read'] });
    const res = await call(path, bearer(key));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    expect(res.body.error.message).toContain(scope);
  });

  test('scope is checked before rate limiting and parameters (D1 order)', async () => {
    const { key } = await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['events:read'] });
    const res = await call('/api/v1/trips?limit=abc', bearer(key));
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('400 before 404', () => {
  test('a bad parameter on a missing object answers 400, naming the parameter', async () => {
    const res = await call('/api/v1/trips/trp_missing?foo=1', bearer(a.key));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', param: 'foo' });
  });
});

describe('agency isolation: key × trip matrix over two agencies', () => {
  const keys: Record<string, () => Record<string, string>> = {
    valid: () => bearer(a.key),
    revoked: () => bearer(revokedKey),
    'other agency': () => bearer(b.key),
    'missing scope': () => bearer(noScopeKey),
    malformed: () => ({ authorization: 'Bearer tps_!!' }),
    absent: () => ({}),
  };
  let revokedKey: string;
  let noScopeKey: string;
  beforeAll(async () => {
    const revoked = await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['trips:read'] });
    await revokeApiKey(t.db, revoked.id);
    revokedKey = revoked.key;
    noScopeKey = (await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['payments:read'] })).key;
  });
  const trips: Record<string, () => string> = {
    own: () => tripA,
    "other agency's": () => tripB,
    missing: () => 'trp_0000000000000000',
  };
  const expected: Record<string, Record<string, number>> = {
    valid: { own: 200, "other agency's": 404, missing: 404 },
    revoked: { own: 401, "other agency's": 401, missing: 401 },
    'other agency': { own: 404, "other agency's": 200, missing: 404 },
    'missing scope': { own: 403, "other agency's": 403, missing: 403 },
    malformed: { own: 401, "other agency's": 401, missing: 401 },
    absent: { own: 401, "other agency's": 401, missing: 401 },
  };
  const cases = Object.keys(keys).flatMap((k) => Object.keys(trips).map((tr) => [k, tr] as const));

  test.each(cases)('key %s × %s trip', async (k, tr) => {
    const res = await call(`/api/v1/trips/${trips[tr]!()}`, keys[k]!());
    expect(res.status).toBe(expected[k]![tr]);
    if (res.status === 200) {
      // Zero cross-agency reads: a 200 is only ever the key's own agency's trip.
      expect(res.body.title).toBe(k === 'valid' ? 'A trip' : 'B trip');
    }
  });

  test("another agency's trip and a missing trip get identical 404 bodies, but for the id and request id", async () => {
    const other = await call(`/api/v1/trips/${tripB}`, bearer(a.key));
    const missing = await call(`/api/v1/trips/${tripB.replace(/.$/, '_')}`, bearer(a.key));
    const normalise = (body: Record<string, any>, id: string) => ({
      ...body.error,
      message: body.error.message.replace(id, '<id>'),
      request_id: '<rid>',
    });
    expect(normalise(other.body, tripB)).toEqual(normalise(missing.body, tripB.replace(/.$/, '_')));
    expect(other.headers.get('content-length')).toBe(missing.headers.get('content-length'));
  });
});

test('no plaintext key is stored anywhere in the database', async () => {
  const { key } = await createApiKey(t.db, { agencyId: a.agencyId, scopes: ['trips:read'] });
  // Every text-like value of every table, searched for any of the keys this file made.
  const tables = ['agencies', 'users', 'api_keys', 'trips', 'payments', 'contacts'];
  for (const table of tables) {
    const { rows } = await sql<{
      row: string;
    }>`SELECT row_to_json(x)::text AS row FROM ${sql.table(table)} x`.execute(t.db);
    for (const { row } of rows) {
      for (const plaintext of [key, a.key, b.key]) {
        expect(row).not.toContain(plaintext);
        expect(row).not.toContain(plaintext.slice(12)); // nor the secret part on its own
      }
    }
  }
});

test('no log line ever contains a key, valid or not', async () => {
  const bogus = `tps_${'Q'.repeat(40)}`;
  await call(`/api/v1/trips/${tripA}`, bearer(a.key));
  await call(`/api/v1/trips/${tripA}`, bearer(bogus));
  await call(`/api/v1/nope?key=${a.key.slice(0, 4)}`, bearer(a.key));
  const logs = api.logs.text();
  expect(logs).toContain('request');
  expect(logs).not.toContain(a.key);
  expect(logs).not.toContain(bogus);
  expect(logs).not.toContain(a.key.slice(12));
});
