import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, newAgencyFor, newWebhookFor } from './helpers.ts';

// tripctl's side of a webhook's signing (D11): ed25519 switched on, its public key printed and
// listed, its key rotated with overlap, switched off; the private key is never printed.

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

const PUBLIC_KEY = /^whpk_[A-Za-z0-9+/]{43}=$/;
const sealed = async (webhookId: string) =>
  (
    await t.db
      .selectFrom('webhook_signing_keys')
      .select('private_key_sealed')
      .where('webhook_id', '=', webhookId)
      .execute()
  ).map((r) => r.private_key_sealed);

test('create and rotate-secret print the secret in its Standard Webhooks form too (JSON and words)', async () => {
  const agency = await newAgencyFor(env);
  const created = await cliJson<{ id: string; secret: string; standard_webhooks_secret: string }>(
    [
      'webhook',
      'create',
      '--agency',
      agency,
      '--url',
      'https://hooks.fairway.example/s',
      '--events',
      'trip.created',
    ],
    env,
  );
  expect(Buffer.from(created.standard_webhooks_secret.slice(6), 'base64')).toEqual(
    Buffer.from(created.secret.slice(6), 'base64url'),
  );
  const rotated = await cli(['webhook', 'rotate-secret', created.id, '--overlap', '0s'], env);
  const [, secret, standard] = /store it now:\n(whsec_\S+)\n.*\n(whsec_\S+)\n$/.exec(rotated.stdout)!;
  expect(Buffer.from(standard!.slice(6), 'base64')).toEqual(Buffer.from(secret!.slice(6), 'base64url'));
});

test('enable-ed25519 prints the public key, list shows it, rotate-ed25519-key overlaps, disable-ed25519 ends it', async () => {
  const agency = await newAgencyFor(env);
  const webhook = await newWebhookFor(env, agency);
  const on = await cli(['webhook', 'enable-ed25519', webhook.id], env);
  expect({ code: on.code, stderr: on.stderr }).toEqual({ code: 0, stderr: '' });
  const publicKey = on.stdout.trim().split('\n').at(-1)!;
  expect(publicKey).toMatch(PUBLIC_KEY);
  expect(on.stdout).toContain(`Webhook ${webhook.id} signs with ed25519`);

  const listed = await cli(['webhook', 'list', '--agency', agency], env);
  expect(listed.stdout).toContain(`  ed25519 public key: ${publicKey}`);
  const listedJson = await cliJson<{ webhooks: { ed25519_public_keys: { public_key: string }[] }[] }>(
    ['webhook', 'list', '--agency', agency, '--json'],
    env,
  );
  expect(listedJson.webhooks[0]!.ed25519_public_keys.map((k) => k.public_key)).toEqual([publicKey]);

  const rotated = await cliJson<{ public_key: string; previous_keys_expire_at: string }>(
    ['webhook', 'rotate-ed25519-key', webhook.id, '--overlap', '1h', '--json'],
    env,
  );
  expect(rotated.public_key).toMatch(PUBLIC_KEY);
  expect(new Date(rotated.previous_keys_expire_at).getTime()).toBeGreaterThan(Date.now() + 3500_000);
  const both = await cli(['webhook', 'list', '--agency', agency], env);
  expect(both.stdout).toContain(
    `  ed25519 public key: ${rotated.public_key}\n  ed25519 public key: ${publicKey}`,
  );

  // Nothing printed holds a private key, sealed or not.
  const keys = await sealed(webhook.id);
  expect(keys).toHaveLength(2);
  for (const output of [on.stdout, listed.stdout, JSON.stringify(listedJson), JSON.stringify(rotated)])
    for (const key of keys) expect(output).not.toContain(key.slice(0, 30));

  const off = await cliJson(['webhook', 'disable-ed25519', webhook.id, '--json'], env);
  expect(off).toEqual({ webhook_id: webhook.id, ed25519: false });
  expect((await cli(['webhook', 'list', '--agency', agency], env)).stdout).not.toContain(
    'ed25519 public key',
  );
});

test('rotating the key of a webhook without ed25519, or with a bad overlap, is refused in words', async () => {
  const agency = await newAgencyFor(env);
  const webhook = await newWebhookFor(env, agency);
  const refused = await cli(['webhook', 'rotate-ed25519-key', webhook.id], env);
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain('does not sign with ed25519; switch ed25519 on first');
  const bad = await cli(['webhook', 'rotate-ed25519-key', webhook.id, '--overlap', 'forever'], env);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("'forever' is not a duration such as 24h, 30m or 0s.");
  expect(await sealed(webhook.id)).toEqual([]);
});
