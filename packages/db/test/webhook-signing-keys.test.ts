import { createPrivateKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { sql } from 'kysely';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { createAgency } from '../src/repositories/agencies.ts';
import {
  listenForDeliveryTargetChanges,
  type DeliveryTargetsChange,
  type DeliveryTargetsListener,
} from '../src/repositories/webhook-changes.ts';
import {
  addSigningKeyIn,
  endSigningKeysIn,
  listSigningKeys,
  openSigningKey,
  signingKeySealKey,
} from '../src/repositories/webhook-signing-keys.ts';
import { createWebhook, findDeliveryTarget } from '../src/repositories/webhooks.ts';

// A webhook's ed25519 keys (migration 0022): stored sealed, read with the webhook as a delivery
// reads it, rotated with overlap, and every change told to the dispatchers as a secret's is.

let t: TestDatabase;
let listener: DeliveryTargetsListener;
const heard: DeliveryTargetsChange[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  listener = await listenForDeliveryTargetChanges(
    t.url,
    { onChange: (change) => heard.push(change), onLost: () => {} },
    'trips-test-signing-keys',
  );
});
afterAll(async () => {
  await listener?.close();
  await t?.drop();
});

async function heardOf(change: () => Promise<unknown>): Promise<DeliveryTargetsChange[]> {
  const from = heard.length;
  await change();
  await waitFor(() => heard.length > from, { what: 'a notification' });
  await sql`SELECT 1`.execute(t.db);
  return heard.slice(from);
}

/** A pair as the signing module makes one: `whpk_` + the raw public key in base64, PKCS #8 DER. */
function pair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return {
    publicKey: `whpk_${raw.toString('base64')}`,
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }),
    publicKeyObject: publicKey,
  };
}

test('a key is sealed in the table, opens only as its webhook’s, and the delivery read carries it', async () => {
  const agency = await createAgency(t.db, { name: 'Sealed' });
  let webhook = { id: '' };
  await heardOf(async () => {
    ({ webhook } = await createWebhook(t.db, {
      agencyId: agency.id,
      url: 'https://a.example/h',
      eventTypes: ['trip.created'],
    }));
  });
  const first = pair();
  const told = await heardOf(() =>
    t.db.transaction().execute((trx) => addSigningKeyIn(trx, webhook.id, first, 60_000)),
  );
  expect(told).toEqual([{ agencyId: agency.id, webhookId: webhook.id }]);

  const row = await t.db.selectFrom('webhook_signing_keys').selectAll().executeTakeFirstOrThrow();
  expect(row.public_key).toBe(first.publicKey);
  // Nothing of the private key in the row, in any of its usual encodings.
  const der = first.privateKey;
  const seed = der.subarray(der.length - 32);
  for (const secret of [der, seed])
    for (const encoding of ['hex', 'base64', 'base64url'] as const)
      expect(JSON.stringify(row)).not.toContain(secret.toString(encoding));

  const read = (await findDeliveryTarget(t.db, webhook.id))!;
  expect(read.signing_keys).toEqual([row.private_key_sealed]);
  expect(read.signing_keys_expire_in_ms).toEqual([null]);
  const sealKey = await signingKeySealKey(t.db);
  const opened = createPrivateKey({
    key: openSigningKey(read.signing_keys[0]!, sealKey, webhook.id),
    format: 'der',
    type: 'pkcs8',
  });
  expect(verify(null, Buffer.from('m'), first.publicKeyObject, sign(null, Buffer.from('m'), opened))).toBe(
    true,
  );
  // Moved to another webhook, or opened with another key, it does not open.
  expect(() => openSigningKey(read.signing_keys[0]!, sealKey, 'whk_other')).toThrow();
  expect(() => openSigningKey(read.signing_keys[0]!, Buffer.alloc(32), webhook.id)).toThrow();
});

test('a rotation overlaps: both keys sign until the old one’s end; switched off, none does', async () => {
  const agency = await createAgency(t.db, { name: 'Rotated' });
  let webhook = { id: '' };
  await heardOf(async () => {
    ({ webhook } = await createWebhook(t.db, {
      agencyId: agency.id,
      url: 'https://a.example/h',
      eventTypes: ['trip.created'],
    }));
  });
  const [first, second] = [pair(), pair()];
  let on = { previousExpireAt: new Date() as Date | null };
  await heardOf(async () => {
    on = await t.db.transaction().execute((trx) => addSigningKeyIn(trx, webhook.id, first, 60_000));
  });
  expect(on.previousExpireAt).toBeNull();
  let rotated = { previousExpireAt: null as Date | null };
  await heardOf(async () => {
    rotated = await t.db.transaction().execute((trx) => addSigningKeyIn(trx, webhook.id, second, 60_000));
  });
  expect(rotated.previousExpireAt!.getTime()).toBeGreaterThan(Date.now() + 55_000);

  const read = (await findDeliveryTarget(t.db, webhook.id))!;
  expect(read.signing_keys).toHaveLength(2);
  expect(read.signing_keys_expire_in_ms[0]).toBeNull(); // the new one, first
  expect(read.signing_keys_expire_in_ms[1]).toBeGreaterThan(55_000);
  expect(read.secrets).toHaveLength(1); // the secrets are apart: one row per webhook still
  expect((await listSigningKeys(t.db, [webhook.id])).get(webhook.id)!.map((k) => k.public_key)).toEqual([
    second.publicKey,
    first.publicKey,
  ]);

  const off = await heardOf(() => t.db.transaction().execute((trx) => endSigningKeysIn(trx, webhook.id)));
  expect(off).toEqual([{ agencyId: agency.id, webhookId: webhook.id }]);
  expect((await findDeliveryTarget(t.db, webhook.id))!.signing_keys).toEqual([]);
  expect((await listSigningKeys(t.db, [webhook.id])).get(webhook.id)).toEqual([]);

  expect(await heardOf(() => sql`TRUNCATE webhook_signing_keys`.execute(t.db))).toEqual(['all']);
});
