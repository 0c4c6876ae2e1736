import { createWebhook } from '@trips/db/webhooks';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { agencyWithPeople, FormClient, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// The settings page's signing choices (D11): the shown-once secret also in the Standard Webhooks
// form, and ed25519 switched on (its public key shown, its private key nowhere), rotated and off;
// a planner and another agency's owner change nothing.

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let a: People;
let b: People;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  a = await agencyWithPeople(t.db, 'Fairway Tours');
  b = await agencyWithPeople(t.db, 'Birdie Travel');
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const outputs = (body: string) =>
  [...body.matchAll(/<output[^>]*aria-label="([^"]*)"[^>]*>([^<]+)<\/output>/g)].map((m) => [
    m[1],
    m[2]!.trim(),
  ]);

/** The page a form's redirect names, with its notice (FormClient.follow keeps the path alone). */
const visit = (client: FormClient, res: { status: number; headers: Headers }) => {
  expect(res.status).toBe(303);
  return client.get(res.headers.get('location')!.replace(/#.*$/, ''));
};

async function ownerOf(people: People) {
  const owner = new FormClient(api.url);
  await owner.signIn(people.owner.email);
  await owner.get('/settings');
  return owner;
}

test('a new or rotated secret is shown once in both forms: the same 32 bytes in base64url and in standard base64', async () => {
  const owner = await ownerOf(a);
  const created = await owner.follow(
    await owner.post('/settings/webhooks', {
      url: 'https://hooks.fairway.example/t',
      events: 'trip.created',
    }),
  );
  const [[, secret], [label, standard]] = outputs(created.body) as [[string, string], [string, string]];
  expect(label).toBe('The same secret for Standard Webhooks libraries');
  expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  expect(standard).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(Buffer.from(standard!.slice(6), 'base64')).toEqual(Buffer.from(secret!.slice(6), 'base64url'));
  expect(api.logs.text()).not.toContain(standard!.slice(6, 40));

  const webhookId = /\/settings\/webhooks\/(whk_\w+)/.exec(created.body)![1]!;
  await owner.get(`/settings/webhooks/${webhookId}`);
  const rotated = await owner.follow(
    await owner.post(`/settings/webhooks/${webhookId}/rotate-secret`, { overlap_seconds: '0' }),
  );
  const [[, next], [, nextStandard]] = outputs(rotated.body) as [[string, string], [string, string]];
  expect(Buffer.from(nextStandard!.slice(6), 'base64')).toEqual(Buffer.from(next!.slice(6), 'base64url'));
});

test('an owner switches ed25519 on, sees the public key, rotates it with overlap and switches it off', async () => {
  const owner = await ownerOf(a);
  const { webhook } = await createWebhook(t.db, {
    agencyId: a.agencyId,
    url: 'https://hooks.fairway.example/ed',
    eventTypes: ['trip.created'],
  });
  const path = `/settings/webhooks/${webhook.id}`;
  const before = await owner.get(path);
  expect(before.body).toContain('Sign with ed25519 too');

  const on = await owner.post(`${path}/ed25519`, {});
  expect([on.status, on.headers.get('location')]).toEqual([303, `${path}?notice=ed25519-on#ed25519-heading`]);
  const shown = await visit(owner, on);
  expect(shown.body).toContain('ed25519 is on');
  const [[label, publicKey]] = outputs(shown.body) as [[string, string]];
  expect(label).toBe('Public key');
  expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
  const [sealed] = await t.db.selectFrom('webhook_signing_keys').select('private_key_sealed').execute();
  // Reloaded, the page shows the key again (it is public), never what is sealed.
  const again = await owner.get(path);
  expect(again.body).toContain(publicKey);
  expect(again.body).not.toContain(sealed!.private_key_sealed.slice(0, 30));

  const rotated = await visit(owner, await owner.post(`${path}/ed25519/rotate`, { overlap_seconds: '3600' }));
  expect(rotated.body).toContain('A new key signs from the next delivery');
  const keys = outputs(rotated.body) as [string, string][];
  expect(keys.map(([l]) => l)).toEqual(['Public key', 'Previous public key']);
  expect(keys[1]![1]).toBe(publicKey);
  expect(rotated.body).toMatch(/signs until/);

  const off = await visit(owner, await owner.post(`${path}/ed25519/off`, {}));
  expect(off.body).toContain('ed25519 is off');
  expect(off.body).toContain('Sign with ed25519 too');
  const actions = (
    await t.db
      .selectFrom('audit_log')
      .select('action')
      .where('object_id', '=', webhook.id)
      .orderBy('id')
      .execute()
  ).map((r) => r.action);
  expect(actions).toEqual([
    'webhook.asymmetric_signing_enabled',
    'webhook.signing_key_rotated',
    'webhook.asymmetric_signing_disabled',
  ]);
  // A bad overlap re-renders the page with the reason, changing nothing.
  await owner.post(`${path}/ed25519`, {});
  const refused = await owner.post(`${path}/ed25519/rotate`, { overlap_seconds: 'forever' });
  expect(refused.status).toBe(400);
  expect(refused.body).toContain('the overlap is from 0 to 7 days.');
  expect(api.logs.text()).not.toMatch(/settings page error/);
});

test('a planner is refused and another agency’s owner finds no such webhook; no key is made', async () => {
  const { webhook } = await createWebhook(t.db, {
    agencyId: a.agencyId,
    url: 'https://hooks.fairway.example/guarded',
    eventTypes: ['trip.created'],
  });
  const planner = new FormClient(api.url);
  await planner.signIn(a.planner.email);
  await planner.get('/settings');
  const outsider = await ownerOf(b);
  for (const action of ['', '/rotate', '/off']) {
    const byPlanner = await planner.post(`/settings/webhooks/${webhook.id}/ed25519${action}`, {
      overlap_seconds: '0',
    });
    const byOutsider = await outsider.post(`/settings/webhooks/${webhook.id}/ed25519${action}`, {
      overlap_seconds: '0',
    });
    expect([action, byPlanner.status, byOutsider.status]).toEqual([action, 403, 404]);
  }
  const made = await t.db
    .selectFrom('webhook_signing_keys')
    .selectAll()
    .where('webhook_id', '=', webhook.id)
    .execute();
  expect(made).toEqual([]);
});
