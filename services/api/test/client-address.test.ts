import { hashPassword } from '@trips/settings';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithPeople, FormClient, PASSWORD } from './settings-support.ts';
import { startTestApi } from './support.ts';

// Whose word the API takes for the client's address and scheme (API_TRUST_PROXY). By default no
// proxy's: a client that sets X-Forwarded-For or X-Forwarded-Proto itself changes neither the
// address the per-address sign-in limit counts nor the cookies. With the proxy's address set, the
// address it forwards is the client's.

const PER_ADDRESS = 3;
let t: TestDatabase;
let hash: string;

beforeAll(async () => {
  t = await createTestDatabase();
  hash = await hashPassword(PASSWORD);
});
afterAll(() => t.drop());

async function startApi(env: Record<string, string> = {}) {
  return startTestApi(t, {
    SETTINGS_SIGN_IN_FAILURES_PER_ADDRESS: String(PER_ADDRESS),
    SETTINGS_SIGN_IN_FAILURES_PER_EMAIL: '100',
    ...env,
  });
}

/** A wrong password for a new e-mail each time, from a client that says it forwards for `forwardedFor`. */
async function failedSignIn(url: string, forwardedFor: string, email: string) {
  const client = new FormClient(url);
  client.headers = { 'x-forwarded-for': forwardedFor };
  return (await client.signIn(email, 'not the password')).status;
}

const addressKeys = async () =>
  (
    await t.db
      .selectFrom('sign_in_failures')
      .select('key')
      .where('key', 'like', 'address:%')
      .orderBy('key')
      .execute()
  ).map((r) => r.key);

test('by default a forged X-Forwarded-For changes nothing: the sign-in limit counts the connection', async () => {
  const api = await startApi();
  try {
    await t.db.deleteFrom('sign_in_failures').execute();
    const statuses = [];
    for (let i = 1; i <= PER_ADDRESS + 2; i++) {
      statuses.push(await failedSignIn(api.url, `198.51.100.${i}`, `nobody${i}@nowhere.test`));
    }
    // Each guess "from" another address, all from this one connection's: the limit holds.
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(await addressKeys()).toEqual([expect.stringMatching(/^address:(::ffff:)?127\.0\.0\.1$/)]);
    // Nor can failures "from" another address lock that address out.
    expect((await addressKeys()).some((k) => k.includes('198.51.100'))).toBe(false);
  } finally {
    await api.stop();
  }
});

test('by default a forged X-Forwarded-Proto does not make the cookies Secure', async () => {
  const api = await startApi();
  try {
    const client = new FormClient(api.url);
    client.headers = { 'x-forwarded-proto': 'https' };
    await client.get('/settings/sign-in');
    expect(client.lastSetCookies[0]).toMatch(/^trips_settings_csrf=/);
    expect(client.lastSetCookies[0]).not.toMatch(/Secure/i);
  } finally {
    await api.stop();
  }
});

test('with API_TRUST_PROXY set to the proxy, the address and scheme it forwards are used', async () => {
  const api = await startApi({ API_TRUST_PROXY: '127.0.0.1, ::1' });
  try {
    await t.db.deleteFrom('sign_in_failures').execute();
    const statuses = [];
    for (let i = 1; i <= PER_ADDRESS + 2; i++) {
      statuses.push(await failedSignIn(api.url, `198.51.100.${i}`, `somebody${i}@nowhere.test`));
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    expect(await addressKeys()).toEqual(
      Array.from({ length: PER_ADDRESS + 2 }, (_, i) => `address:198.51.100.${i + 1}`),
    );
    // One client behind the proxy, over its limit, is throttled; the others are not.
    for (let i = 0; i < PER_ADDRESS; i++) await failedSignIn(api.url, '203.0.113.9', `x${i}@nowhere.test`);
    expect(await failedSignIn(api.url, '203.0.113.9', 'y@nowhere.test')).toBe(429);
    expect(await failedSignIn(api.url, '203.0.113.10', 'y@nowhere.test')).toBe(401);
    // A client's own X-Forwarded-For before the proxy's entry is not believed: the proxy appends.
    expect(await failedSignIn(api.url, '198.51.100.1, 203.0.113.9', 'z@nowhere.test')).toBe(429);
    // A forwarded address holding a control character is refused like any other value.
    expect(await failedSignIn(api.url, '203.0.113.\u0085', 'c@nowhere.test')).toBe(400);

    const people = await agencyWithPeople(t.db, 'Proxied Tours', hash);
    const client = new FormClient(api.url);
    client.headers = { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.20' };
    expect((await client.signIn(people.owner.email)).status).toBe(303);
    const session = client.lastSetCookies.find((c) => c.startsWith('trips_settings_session='));
    expect(session).toMatch(/; Secure/);
  } finally {
    await api.stop();
  }
});

test('a forwarded address of any length is counted, never a 500', async () => {
  const api = await startApi({ API_TRUST_PROXY: '127.0.0.1, ::1' });
  try {
    expect(await failedSignIn(api.url, 'x'.repeat(2000), 'long@nowhere.test')).toBe(401);
    expect(api.logs.text()).not.toMatch(/settings page error/);
  } finally {
    await api.stop();
  }
});
