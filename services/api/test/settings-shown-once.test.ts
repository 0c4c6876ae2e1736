import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { agencyWithPeople, FormClient, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// Post/redirect/get (issue 26): every form that creates or changes something answers with a
// redirect, so reloading the page it lands on repeats nothing; a new key or secret is shown on one
// page, once: a reload, a second visit or another session finds it gone, and it is never in a URL,
// a log or, readable, in the database.

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let a: People;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  a = await agencyWithPeople(t.db, 'Fairway Tours');
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const count = async (table: 'api_keys' | 'webhooks' | 'webhook_secrets' | 'audit_log') =>
  Number(
    (
      await t.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const shownValue = (body: string) => /<output aria-label="[^"]*">([^<]+)<\/output>/.exec(body)?.[1];

/**
 * Posts a creating form and checks the whole shown-once round: a 303 to a page of its own that
 * names nothing secret, that page showing the value once, then a reload (and another owner's
 * session) finding it gone, with nothing created again. Answers the value.
 */
async function createShownOnce(owner: FormClient, path: string, fields: Record<string, string | string[]>) {
  const before = await Promise.all([count('api_keys'), count('webhooks'), count('webhook_secrets')]);
  const posted = await owner.post(path, fields);
  expect(posted.status).toBe(303);
  const location = posted.headers.get('location')!;
  expect(location).toMatch(/^\/settings\/shown-once\/[\w-]{16,64}$/);
  expect(posted.body).not.toMatch(/tps_|whsec_/);
  const created = await Promise.all([count('api_keys'), count('webhooks'), count('webhook_secrets')]);

  // The value waits sealed: the table alone does not hold it.
  const waiting = await t.db.selectFrom('shown_once').selectAll().execute();
  expect(waiting).toHaveLength(1);

  // Another owner's session cannot take it, and does not use it up either.
  const other = new FormClient(api.url);
  await other.signIn(a.owner.email);
  expect((await other.get(location)).status).toBe(410);

  const shown = await owner.get(location);
  expect(shown.status).toBe(200);
  expect(shown.headers.get('cache-control')).toBe('no-store');
  const value = shownValue(shown.body)!;
  expect(value).toMatch(/^(tps_|whsec_)/);
  expect(JSON.stringify(waiting)).not.toContain(value);
  expect(location).not.toContain(value);

  // Reloaded: shown no more, and nothing made again.
  const reloaded = await owner.get(location);
  expect(reloaded.status).toBe(410);
  expect(reloaded.body).not.toContain(value);
  expect(reloaded.body).toContain('shown only once');
  expect(await Promise.all([count('api_keys'), count('webhooks'), count('webhook_secrets')])).toEqual(
    created,
  );
  expect(created).not.toEqual(before);
  expect(await t.db.selectFrom('shown_once').selectAll().execute()).toEqual([]);
  expect(api.logs.text()).not.toContain(value);
  return value;
}

test('a new key, webhook secret or rotated secret is shown once, after a redirect; a reload shows and makes nothing', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const key = await createShownOnce(owner, '/settings/keys', { name: 'Sync', scopes: 'trips:read' });
  const trips = await fetch(`${api.url}/api/v1/trips`, { headers: { authorization: `Bearer ${key}` } });
  expect(trips.status).toBe(200);

  await owner.get('/settings');
  await createShownOnce(owner, '/settings/webhooks', {
    url: 'https://hooks.example/x',
    events: 'trip.created',
  });
  const webhook = await t.db.selectFrom('webhooks').select('id').executeTakeFirstOrThrow();
  await owner.get(`/settings/webhooks/${webhook.id}`);
  const rotated = await createShownOnce(owner, `/settings/webhooks/${webhook.id}/rotate-secret`, {
    overlap_seconds: '3600',
  });
  const secrets = await t.db.selectFrom('webhook_secrets').select('secret').execute();
  expect(secrets.map((s) => s.secret)).toContain(rotated);

  const audit = await t.db.selectFrom('audit_log').select('action').orderBy('id').execute();
  expect(audit.map((e) => e.action)).toEqual([
    'api_key.created',
    'webhook.created',
    'webhook.secret_rotated',
  ]);
});

test('every other changing form answers 303 to a page that a reload only reads', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  await owner.follow(await owner.post('/settings/keys', { name: 'Other', scopes: 'trips:read' }));
  const key = await t.db
    .selectFrom('api_keys')
    .select('id')
    .where('name', '=', 'Other')
    .executeTakeFirstOrThrow();
  const webhook = await t.db.selectFrom('webhooks').select('id').executeTakeFirstOrThrow();
  await owner.get('/settings');
  const posts: [string, Record<string, string>][] = [
    [`/settings/keys/${key.id}/scopes`, { scopes: 'events:read' }],
    [`/settings/webhooks/${webhook.id}`, { url: 'https://hooks.example/y', events: 'trip.updated' }],
    [`/settings/webhooks/${webhook.id}/disable`, {}],
    [`/settings/webhooks/${webhook.id}/enable`, {}],
    [`/settings/keys/${key.id}/revoke`, {}],
  ];
  for (const [path, fields] of posts) {
    const audited = await count('audit_log');
    const res = await owner.post(path, fields);
    expect([path, res.status]).toEqual([path, 303]);
    const changed = await count('audit_log');
    expect(changed).toBeGreaterThan(audited);
    const landed = await owner.get(res.headers.get('location')!);
    expect(landed.status).toBe(200);
    await owner.get(res.headers.get('location')!);
    expect(await count('audit_log')).toBe(changed);
  }
});
