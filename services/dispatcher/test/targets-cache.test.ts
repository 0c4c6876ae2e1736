import { generateKeyPairSync } from 'node:crypto';
import { nodeEd25519Signer } from '@trips/contracts/webhook-signing';
import { DeliveryTargetsCache, type TargetRead } from '../src/targets-cache.ts';

// The cache of delivery targets alone, over reads the test answers when it likes, with a clock it
// moves: which lookups read, which answers are kept, and which must not be.

const target = (id: string, agencyId: string, url = `https://hooks.example/${id}`): TargetRead => ({
  id,
  agency_id: agencyId,
  url,
  event_types: ['trip.created'],
  disabled_at: null,
  epoch: 1,
  secrets: [`whsec_${id}`],
  secrets_expire_in_ms: [null],
  signing_keys: [],
  signing_keys_expire_in_ms: [],
  rate_limit: null,
  paused_for_ms: null,
});

/** A read the test answers by hand: each call is one read, pending until answered. */
function controllableRead<T>() {
  const calls: { key: string; answer: (value: T) => void; fail: (error: Error) => void }[] = [];
  const read = (key: string) =>
    new Promise<T>((resolve, reject) => calls.push({ key, answer: resolve, fail: reject }));
  return { read, calls };
}

function setup(ttlMs = 30_000) {
  let clock = 1_000_000;
  const cache = new DeliveryTargetsCache({ ttlMs, now: () => clock });
  cache.listening();
  return { cache, advance: (ms: number) => (clock += ms) };
}

test('an agency is read once, then answered from the cache until a notification names it', async () => {
  const { cache } = setup();
  const { read, calls } = controllableRead<TargetRead[]>();
  const first = cache.agencyTargets('agy_a', read);
  calls[0]!.answer([target('whk_1', 'agy_a')]);
  expect((await first).map((t) => t.url)).toEqual(['https://hooks.example/whk_1']);
  expect((await cache.agencyTargets('agy_a', read)).map((t) => t.id)).toEqual(['whk_1']);
  expect(calls).toHaveLength(1);

  // A change of another agency, or of a webhook alone, leaves it be.
  cache.changed({ agencyId: 'agy_b', webhookId: 'whk_9' });
  cache.changed({ agencyId: null, webhookId: 'whk_1' });
  await cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(1);

  cache.changed({ agencyId: 'agy_a', webhookId: 'whk_1' });
  const again = cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(2);
  calls[1]!.answer([target('whk_1', 'agy_a', 'https://hooks.example/moved')]);
  expect((await again)[0]!.url).toBe('https://hooks.example/moved');
  // Not what the read kept as its own: the secrets' ends are the cache's, not the row's.
  expect((await again)[0]).not.toHaveProperty('secrets_expire_in_ms');
});

test('lookups made while a read is under way share it', async () => {
  const { cache } = setup();
  const { read, calls } = controllableRead<TargetRead[]>();
  const lookups = [cache.agencyTargets('agy_a', read), cache.agencyTargets('agy_a', read)];
  expect(calls).toHaveLength(1);
  calls[0]!.answer([]);
  expect(await Promise.all(lookups)).toEqual([[], []]);
});

describe('a notification that arrives while a read is under way', () => {
  test('about its agency: the answer is used by its lookup, and not kept', async () => {
    const { cache } = setup();
    const { read, calls } = controllableRead<TargetRead[]>();
    const during = cache.agencyTargets('agy_a', read);
    // The change committed after the read's snapshot: the answer may be the old one.
    cache.changed({ agencyId: 'agy_a', webhookId: 'whk_1' });
    calls[0]!.answer([target('whk_1', 'agy_a', 'https://hooks.example/old')]);
    expect((await during)[0]!.url).toBe('https://hooks.example/old');

    // The next lookup reads again, rather than keep the old URL until the TTL.
    const after = cache.agencyTargets('agy_a', read);
    expect(calls).toHaveLength(2);
    calls[1]!.answer([target('whk_1', 'agy_a', 'https://hooks.example/new')]);
    expect((await after)[0]!.url).toBe('https://hooks.example/new');
    await cache.agencyTargets('agy_a', read);
    expect(calls).toHaveLength(2);
  });

  test('about everything (a TRUNCATE): not kept', async () => {
    const { cache } = setup();
    const { read, calls } = controllableRead<TargetRead[]>();
    const during = cache.agencyTargets('agy_a', read);
    cache.changed('all');
    calls[0]!.answer([target('whk_1', 'agy_a')]);
    await during;
    void cache.agencyTargets('agy_a', read);
    expect(calls).toHaveLength(2);
  });

  test('about its webhook, for a retry’s lookup by id: not kept', async () => {
    const { cache } = setup();
    const { read, calls } = controllableRead<TargetRead | undefined>();
    const during = cache.webhookTarget('whk_1', read);
    cache.changed({ agencyId: 'agy_a', webhookId: 'whk_1' });
    calls[0]!.answer({ ...target('whk_1', 'agy_a'), epoch: 1 });
    expect((await during)!.epoch).toBe(1);
    const after = cache.webhookTarget('whk_1', read);
    expect(calls).toHaveLength(2);
    calls[1]!.answer({ ...target('whk_1', 'agy_a'), epoch: 2 });
    expect((await after)!.epoch).toBe(2);
  });

  test('about another agency: kept', async () => {
    const { cache } = setup();
    const { read, calls } = controllableRead<TargetRead[]>();
    const during = cache.agencyTargets('agy_a', read);
    cache.changed({ agencyId: 'agy_b', webhookId: 'whk_2' });
    calls[0]!.answer([target('whk_1', 'agy_a')]);
    await during;
    await cache.agencyTargets('agy_a', read);
    expect(calls).toHaveLength(1);
  });
});

test('nothing is kept before LISTEN is in effect nor once its connection is lost; back, it starts empty', async () => {
  const cache = new DeliveryTargetsCache({ ttlMs: 30_000 });
  const { read, calls } = controllableRead<TargetRead[]>();
  const answerAll = (value: TargetRead[]) => calls.forEach((c) => c.answer(value));

  // Not listening yet: every lookup reads.
  const before = [cache.agencyTargets('agy_a', read), cache.agencyTargets('agy_a', read)];
  expect(calls).toHaveLength(2);
  // A read that began before LISTEN took effect ends after it: its answer is not kept either.
  cache.listening();
  answerAll([target('whk_1', 'agy_a')]);
  await Promise.all(before);
  const first = cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(3);
  calls[2]!.answer([target('whk_1', 'agy_a')]);
  await first;
  await cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(3);

  // Lost: the kept entries go, and lookups read, each of them, however many.
  cache.notListening();
  void cache.agencyTargets('agy_a', read);
  void cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(5);
  calls[3]!.answer([]);
  calls[4]!.answer([]);

  // Listening again: read once more, then kept.
  cache.listening();
  const back = cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(6);
  calls[5]!.answer([target('whk_1', 'agy_a', 'https://hooks.example/changed-while-lost')]);
  expect((await back)[0]!.url).toBe('https://hooks.example/changed-while-lost');
  await cache.agencyTargets('agy_a', read);
  expect(calls).toHaveLength(6);
});

test('a TTL of 0 keeps nothing, even while listening', async () => {
  const cache = new DeliveryTargetsCache({ ttlMs: 0 });
  cache.listening();
  let reads = 0;
  const read = async () => (reads++, [target('whk_1', 'agy_a')]);
  await cache.agencyTargets('agy_a', read);
  await cache.agencyTargets('agy_a', read);
  expect(reads).toBe(2);
});

test('an entry is read again after the TTL, counted from when its read began', async () => {
  const { cache, advance } = setup(5_000);
  let reads = 0;
  const read = async () => (reads++, [target('whk_1', 'agy_a')]);
  await cache.agencyTargets('agy_a', read);
  advance(4_999);
  await cache.agencyTargets('agy_a', read);
  expect(reads).toBe(1);
  advance(1);
  await cache.agencyTargets('agy_a', read);
  expect(reads).toBe(2);
});

test('a secret stops signing at its end, on the cache’s clock, with nothing told', async () => {
  const { cache, advance } = setup();
  let reads = 0;
  const read = async () => (
    reads++,
    [
      {
        ...target('whk_1', 'agy_a'),
        secrets: ['whsec_new', 'whsec_old'],
        secrets_expire_in_ms: [null, 1_500],
      },
    ]
  );
  expect((await cache.agencyTargets('agy_a', read))[0]!.secrets).toEqual(['whsec_new', 'whsec_old']);
  advance(1_499);
  expect((await cache.agencyTargets('agy_a', read))[0]!.secrets).toEqual(['whsec_new', 'whsec_old']);
  advance(1);
  expect((await cache.agencyTargets('agy_a', read))[0]!.secrets).toEqual(['whsec_new']);
  expect(reads).toBe(1);
});

test('an ed25519 key stops signing at its end too, so a rotation of keys overlaps as one of secrets does', async () => {
  const { cache, advance } = setup();
  const [newKey, oldKey] = [
    nodeEd25519Signer(generateKeyPairSync('ed25519').privateKey),
    nodeEd25519Signer(generateKeyPairSync('ed25519').privateKey),
  ];
  let reads = 0;
  const read = async () => (
    reads++,
    [
      {
        ...target('whk_1', 'agy_a'),
        signing_keys: [newKey, oldKey],
        signing_keys_expire_in_ms: [null, 2_000],
      },
    ]
  );
  expect((await cache.agencyTargets('agy_a', read))[0]!.signing_keys).toEqual([newKey, oldKey]);
  advance(1_999);
  expect((await cache.agencyTargets('agy_a', read))[0]!.signing_keys).toEqual([newKey, oldKey]);
  advance(1);
  const [after] = await cache.agencyTargets('agy_a', read);
  expect(after!.signing_keys).toEqual([newKey]);
  expect(after!.secrets).toEqual(['whsec_whk_1']);
  expect(reads).toBe(1);
});

test('a failed read is not kept; a missing webhook is kept as missing until a notification names it', async () => {
  const { cache } = setup();
  const { read, calls } = controllableRead<TargetRead | undefined>();
  const failing = cache.webhookTarget('whk_1', read);
  calls[0]!.fail(new Error('Postgres away'));
  await expect(failing).rejects.toThrow('Postgres away');

  const missing = cache.webhookTarget('whk_1', read);
  expect(calls).toHaveLength(2);
  calls[1]!.answer(undefined);
  expect(await missing).toBeUndefined();
  expect(await cache.webhookTarget('whk_1', read)).toBeUndefined();
  expect(calls).toHaveLength(2);
  cache.changed({ agencyId: 'agy_a', webhookId: 'whk_1' });
  void cache.webhookTarget('whk_1', read);
  expect(calls).toHaveLength(3);
});

test('past its size the cache forgets the entries read longest ago', async () => {
  const cache = new DeliveryTargetsCache({ ttlMs: 30_000, maxEntries: 2 });
  cache.listening();
  const reads: string[] = [];
  const read = async (agencyId: string) => (reads.push(agencyId), []);
  for (const agencyId of ['agy_a', 'agy_b', 'agy_c', 'agy_b', 'agy_a'])
    await cache.agencyTargets(agencyId, read);
  expect(reads).toEqual(['agy_a', 'agy_b', 'agy_c', 'agy_a']);
});
