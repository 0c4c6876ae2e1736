import { findDeliveryTarget } from '@trips/db/webhooks';
import { waitFor, type TestDatabase } from '@trips/testkit';
import type { Settings } from '../src/index.ts';
import {
  auditOf as auditRowsOf,
  newAgencyIn,
  newWebhookIn,
  refused,
  settingsStack,
  type SettingsStack,
} from './support.ts';

// Signing choices of a webhook (D11): the secret in both its forms, and ed25519 switched on,
// rotated with overlap and off, by owners only, the private key never in an answer or the audit.

let stack: SettingsStack;
let t: TestDatabase;
let settings: Settings;

beforeAll(async () => {
  stack = await settingsStack();
  ({ t, settings } = stack);
});
afterAll(() => stack?.close());

const auditOf = (agencyId: string) => auditRowsOf(t, agencyId);
const sealedKeys = async (webhookId: string) =>
  (
    await t.db
      .selectFrom('webhook_signing_keys')
      .select('private_key_sealed')
      .where('webhook_id', '=', webhookId)
      .execute()
  ).map((r) => r.private_key_sealed);

test('a new or rotated secret comes with its Standard Webhooks form: the same bytes in standard base64', async () => {
  const a = await newAgencyIn(t);
  const created = await newWebhookIn(settings, a);
  const bytes = (secret: string) => Buffer.from(secret.slice('whsec_'.length), 'base64');
  expect(created.standard_webhooks_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(bytes(created.standard_webhooks_secret)).toEqual(Buffer.from(created.secret.slice(6), 'base64url'));
  expect(created.webhook.ed25519_public_keys).toEqual([]);
  const rotated = await settings.rotateSecret(a.owner, created.webhook.id);
  expect(bytes(rotated.standard_webhooks_secret)).toEqual(Buffer.from(rotated.secret.slice(6), 'base64url'));
  const audit = JSON.stringify(await auditOf(a.id));
  for (const value of [created.standard_webhooks_secret, rotated.standard_webhooks_secret])
    expect(audit).not.toContain(value.slice(6));
});

test('ed25519 on: a whpk_ public key in the webhook, its private key only sealed; on again changes nothing', async () => {
  const a = await newAgencyIn(t);
  const { webhook } = await newWebhookIn(settings, a);
  const on = await settings.enableEd25519(a.owner, webhook.id);
  expect(on.public_key).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
  expect(Object.keys(on).sort()).toEqual(['public_key', 'webhook_id']);
  const shown = await settings.getWebhook(a.owner, webhook.id);
  expect(shown.ed25519_public_keys).toEqual([
    { public_key: on.public_key, created_at: expect.any(Date), expires_at: null },
  ]);
  const [listed] = await settings.listWebhooks(a.owner, a.id);
  expect(listed!.ed25519_public_keys.map((k) => k.public_key)).toEqual([on.public_key]);
  expect((await findDeliveryTarget(t.db, webhook.id))!.signing_keys).toEqual(await sealedKeys(webhook.id));
  const audit = await auditOf(a.id);
  expect(audit.at(-1)).toMatchObject({
    action: 'webhook.asymmetric_signing_enabled',
    details: { public_key: on.public_key },
  });
  // Nothing an owner or the audit sees holds the sealed key.
  const [sealed] = await sealedKeys(webhook.id);
  for (const seen of [on, shown, listed, audit])
    expect(JSON.stringify(seen)).not.toContain(sealed!.slice(0, 40));

  const again = await settings.enableEd25519(a.owner, webhook.id);
  expect(again.public_key).toBe(on.public_key);
  expect(await auditOf(a.id)).toHaveLength(audit.length);
});

test('a rotated key overlaps as a secret does; off, no key signs; each audited once', async () => {
  const a = await newAgencyIn(t);
  const { webhook } = await newWebhookIn(settings, a);
  await refused(
    settings.rotateSigningKey(a.owner, webhook.id),
    'invalid',
    /does not sign with ed25519; switch ed25519 on first/,
  );
  const on = await settings.enableEd25519(a.owner, webhook.id);
  await refused(settings.rotateSigningKey(a.owner, webhook.id, { overlapMs: -1 }), 'invalid', /0 to 7 days/);
  const rotated = await settings.rotateSigningKey(a.owner, webhook.id, { overlapMs: 2_000 });
  expect(rotated.public_key).not.toBe(on.public_key);
  expect(rotated.previous_keys_expire_at.getTime()).toBeGreaterThan(Date.now());
  const keys = (await settings.getWebhook(a.owner, webhook.id)).ed25519_public_keys;
  expect(keys.map((k) => k.public_key)).toEqual([rotated.public_key, on.public_key]);
  expect(keys[1]!.expires_at).toEqual(rotated.previous_keys_expire_at);
  expect((await auditOf(a.id)).at(-1)).toMatchObject({
    action: 'webhook.signing_key_rotated',
    details: { public_key: rotated.public_key, overlap_seconds: 2 },
  });
  await waitFor(
    async () => (await settings.getWebhook(a.owner, webhook.id)).ed25519_public_keys.length === 1,
    { timeoutMs: 5_000, what: 'the old key to end' },
  );
  expect((await findDeliveryTarget(t.db, webhook.id))!.signing_keys).toHaveLength(1);

  await settings.disableEd25519(a.owner, webhook.id);
  expect((await settings.getWebhook(a.owner, webhook.id)).ed25519_public_keys).toEqual([]);
  expect((await findDeliveryTarget(t.db, webhook.id))!.signing_keys).toEqual([]);
  const audit = await auditOf(a.id);
  expect(audit.at(-1)).toMatchObject({ action: 'webhook.asymmetric_signing_disabled' });
  await settings.disableEd25519(a.owner, webhook.id);
  expect(await auditOf(a.id)).toHaveLength(audit.length);
});

test("a planner is refused; another agency's owner finds no such webhook; nothing changes", async () => {
  const a = await newAgencyIn(t);
  const other = await newAgencyIn(t);
  const { webhook } = await newWebhookIn(settings, a);
  const before = await auditOf(a.id);
  for (const [who, code] of [
    [a.planner, 'forbidden'],
    [other.owner, 'not_found'],
  ] as const) {
    await refused(settings.enableEd25519(who, webhook.id), code);
    await refused(settings.rotateSigningKey(who, webhook.id), code);
    await refused(settings.disableEd25519(who, webhook.id), code);
  }
  expect(await auditOf(a.id)).toEqual(before);
  expect(await sealedKeys(webhook.id)).toEqual([]);
});
