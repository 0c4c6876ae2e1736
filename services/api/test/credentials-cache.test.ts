import { hashApiKey, type KeyCredentials } from '@trips/db/api-keys';
import { CredentialsCache, keyHashOf } from '../src/auth/credentials-cache.ts';

const KEY = `tps_${'a1B2'.repeat(10)}`;
const credentials: KeyCredentials = {
  keyId: 'key_1',
  agencyId: 'agc_1',
  scopes: ['trips:read'],
  revoked: false,
  apiEnabled: true,
  subscriptionStatus: 'active',
  trialEndsAt: null,
};

/** A cache over a fake table of one key, counting loads, with a clock the test moves. */
function setup(ttlMs = 60_000) {
  const loads: Buffer[] = [];
  let fail = false;
  const cache = new CredentialsCache(async (hash) => {
    loads.push(hash);
    if (fail) throw new Error('database down');
    return hash.equals(hashApiKey(KEY)) ? credentials : undefined;
  }, ttlMs);
  return { cache, loads, failNext: (value: boolean) => (fail = value) };
}

test("a key's cache name is the SHA-256 that api_keys.hash stores, in base64", () => {
  expect(Buffer.from(keyHashOf(KEY), 'base64').equals(hashApiKey(KEY))).toBe(true);
  expect(keyHashOf(KEY)).not.toContain(KEY.slice(4, 12));
});

test('concurrent requests share one load; once loaded, a key is answered without a promise', async () => {
  const { cache, loads } = setup();
  const first = cache.get(keyHashOf(KEY));
  const second = cache.get(keyHashOf(KEY));
  expect(first).toBeInstanceOf(Promise);
  expect(await first).toBe(credentials);
  expect(await second).toBe(credentials);
  expect(cache.get(keyHashOf(KEY))).toBe(credentials);
  expect(loads).toHaveLength(1);
  expect(loads[0]!.equals(hashApiKey(KEY))).toBe(true);
});

test('unknown keys and failed loads are not cached; clear() and the TTL force a reload', async () => {
  const { cache, loads, failNext } = setup(50);
  const unknown = keyHashOf(`tps_${'Z'.repeat(40)}`);
  expect(await cache.get(unknown)).toBeUndefined();
  expect(await cache.get(unknown)).toBeUndefined();
  expect(loads).toHaveLength(2);

  failNext(true);
  await expect(cache.get(keyHashOf(KEY))).rejects.toThrow('database down');
  failNext(false);
  expect(await cache.get(keyHashOf(KEY))).toBe(credentials);
  expect(loads).toHaveLength(4);

  cache.clear();
  expect(cache.get(keyHashOf(KEY))).toBeInstanceOf(Promise);
  expect(loads).toHaveLength(5);
  await new Promise((resolve) => setTimeout(resolve, 60));
  expect(await cache.get(keyHashOf(KEY))).toBe(credentials);
  expect(loads).toHaveLength(6);
});
