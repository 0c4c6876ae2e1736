import { createHash } from 'node:crypto';
import { createWebhook } from '@trips/db/webhooks';
import { hashPassword } from '@trips/settings';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { agencyWithPeople, FormClient, PASSWORD, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// The settings page's HTTP rules, below the browser: sessions, CSRF, sign-in limits, owners only,
// agency isolation, escaping, and that a refused or bad form changes nothing. The browser test
// (settings-browser.test.ts) drives the same page through Chromium.

const FAILURES_PER_EMAIL = 3;
let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let a: People;
let b: People;
let otherWebhookId: string;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, {
    AMQP_PREFIX: randomAmqpPrefix(),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false',
    SETTINGS_SIGN_IN_FAILURES_PER_EMAIL: String(FAILURES_PER_EMAIL),
  });
  const hash = await hashPassword(PASSWORD);
  a = await agencyWithPeople(t.db, 'Fairway Tours', hash);
  b = await agencyWithPeople(t.db, 'Birdie Travel', hash);
  otherWebhookId = (
    await createWebhook(t.db, {
      agencyId: b.agencyId,
      url: 'https://b.example/hooks',
      eventTypes: ['trip.created'],
    })
  ).webhook.id;
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const count = async (table: 'api_keys' | 'webhooks' | 'audit_log' | 'owner_sessions') =>
  Number(
    (
      await t.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

test('signed out, every settings page sends to sign-in; the sign-in page is locked down', async () => {
  const client = new FormClient(api.url);
  for (const path of ['/settings', '/settings/webhooks/whk_x', '/settings/nothing-here']) {
    const res = await client.get(path);
    expect([res.status, res.headers.get('location')]).toEqual([303, '/settings/sign-in']);
  }
  const page = await client.get('/settings/sign-in');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(page.headers.get('x-frame-options')).toBe('DENY');
  expect(page.body).toContain('<label for="email">');
  expect(client.lastSetCookies[0]).toMatch(
    /^trips_settings_csrf=[\w-]{43}; Path=\/settings; HttpOnly; SameSite=Lax$/,
  );
});

test('an owner signs in: the cookie is HttpOnly and SameSite, only its hash is stored, sign-out ends it', async () => {
  const client = new FormClient(api.url);
  const res = await client.signIn(a.owner.email.toUpperCase());
  expect([res.status, res.headers.get('location')]).toEqual([303, '/settings']);
  const cookie = client.lastSetCookies.find((c) => c.startsWith('trips_settings_session='))!;
  expect(cookie).toMatch(/; Max-Age=43200; Path=\/settings; Expires=.*; HttpOnly; SameSite=Lax$/);
  const token = client.cookies.get('trips_settings_session')!;
  const stored = await t.db
    .selectFrom('owner_sessions')
    .selectAll()
    .where('user_id', '=', a.owner.id)
    .execute();
  expect(stored.map((s) => s.token_hash)).toContain(createHash('sha256').update(token).digest('hex'));
  expect(JSON.stringify(stored)).not.toContain(token);

  const overview = await client.get('/settings');
  expect(overview.status).toBe(200);
  expect(overview.body).toContain('Fairway Tours');
  expect(overview.body).toContain(a.owner.email);

  expect((await client.post('/settings/sign-out', {})).headers.get('location')).toBe('/settings/sign-in');
  expect((await client.get('/settings')).status).toBe(303);
  // The old cookie is dead on the server too, not just forgotten by this client.
  const replay = new FormClient(api.url);
  replay.cookies.set('trips_settings_session', token);
  expect((await replay.get('/settings')).status).toBe(303);
});

test('an expired session is signed out', async () => {
  const client = new FormClient(api.url);
  await client.signIn(a.owner.email);
  const token = client.cookies.get('trips_settings_session')!;
  await t.db
    .updateTable('owner_sessions')
    .set({ created_at: new Date(Date.now() - 2000), expires_at: new Date(Date.now() - 1000) })
    .where('token_hash', '=', createHash('sha256').update(token).digest('hex'))
    .execute();
  expect((await client.get('/settings')).status).toBe(303);
});

test('wrong password and unknown e-mail get the same answer; the password is never logged', async () => {
  const client = new FormClient(api.url);
  const wrong = await client.signIn(a.planner.email, 'not the password at all');
  const unknown = await client.signIn('nobody@nowhere.test', 'not the password at all');
  expect([wrong.status, unknown.status]).toEqual([401, 401]);
  const message = (body: string) => /role="alert">(.*?)<\/div>/s.exec(body)![1];
  expect(message(wrong.body)).toBe(message(unknown.body));
  expect(message(wrong.body)).toContain('wrong e-mail or password');
  expect(api.logs.text()).not.toContain('not the password at all');
  expect(api.logs.text()).not.toContain(PASSWORD);
});

test('sign-in is rate-limited per e-mail, counting parallel guesses, and tells when to retry', async () => {
  const { owner } = await agencyWithPeople(t.db, 'Guessed Golf');
  // A burst of parallel guesses: a check-then-count limit would let all of them through.
  const guesses = await Promise.all(
    Array.from({ length: 8 }, () => new FormClient(api.url).signIn(owner.email, 'guess guess guess')),
  );
  const statuses = guesses.map((g) => g.status).sort();
  expect(statuses.filter((s) => s === 401)).toHaveLength(FAILURES_PER_EMAIL);
  expect(statuses.filter((s) => s === 429)).toHaveLength(8 - FAILURES_PER_EMAIL);
  // Over the limit even the right password is not checked.
  const right = await new FormClient(api.url).signIn(owner.email);
  expect(right.status).toBe(429);
  expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(800);
  expect(right.body).toMatch(/too many failed sign-ins\. Try again in 1[45] minutes/);
  // Another e-mail from the same address is not locked out by it.
  expect((await new FormClient(api.url).signIn(a.owner.email)).status).toBe(303);
});

test('every form needs its session token: without it, with a stale one, or another session’s, nothing changes', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const other = new FormClient(api.url);
  await other.signIn(b.owner.email);
  await other.get('/settings');
  const [keys, audit] = [await count('api_keys'), await count('audit_log')];
  for (const csrf of [null, '', 'x'.repeat(43), other.csrf]) {
    const res = await owner.post('/settings/keys', { csrf, scopes: 'trips:read' });
    expect(res.status).toBe(403);
    expect(res.body).toContain('nothing was changed');
  }
  expect([await count('api_keys'), await count('audit_log')]).toEqual([keys, audit]);
  // Sign-in itself: a form from elsewhere has no matching cookie.
  const forged = new FormClient(api.url);
  const res = await forged.post('/settings/sign-in', {
    csrf: 'forged',
    email: a.owner.email,
    password: PASSWORD,
  });
  expect(res.status).toBe(403);
  expect(forged.cookies.has('trips_settings_session')).toBe(false);
});

test('a planner signs in but is refused everything with a clear 403, and nothing changes', async () => {
  const planner = new FormClient(api.url);
  expect((await planner.signIn(a.planner.email)).status).toBe(303);
  const overview = await planner.get('/settings');
  expect(overview.status).toBe(403);
  expect(overview.body).toContain('Only an owner of the agency manages its API keys and webhooks');
  const [keys, webhooks] = [await count('api_keys'), await count('webhooks')];
  expect((await planner.post('/settings/keys', { scopes: 'trips:read' })).status).toBe(403);
  const hook = await planner.post('/settings/webhooks', {
    url: 'https://a.example/x',
    events: 'trip.created',
  });
  expect(hook.status).toBe(403);
  expect([await count('api_keys'), await count('webhooks')]).toEqual([keys, webhooks]);
});

test('a NUL character in a form or a path is a 400 naming it, not a 500; an undecodable id a 404', async () => {
  const anonymous = new FormClient(api.url);
  await anonymous.get('/settings/sign-in');
  const signIn = await anonymous.post('/settings/sign-in', { email: `${a.owner.email}\0`, password: 'x' });
  expect(signIn.status).toBe(400);
  expect(signIn.body).toContain('The field &#39;email&#39; holds a control character');

  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const keys = await t.db.selectFrom('api_keys').select('id').execute();
  expect((await owner.post('/settings/keys', { name: 'a\0b', scopes: 'trips:read' })).status).toBe(400);
  expect(await t.db.selectFrom('api_keys').select('id').execute()).toEqual(keys);
  expect((await owner.get('/settings/webhooks/whk_%00')).status).toBe(400);
  const undecodable = await owner.get('/settings/webhooks/%E0%A4%A');
  expect(undecodable.status).toBe(404);
  expect(undecodable.body).toContain('There is no such key or webhook in your agency.');
  expect(api.logs.text()).not.toMatch(/settings page error/);
});

test.each(['owner', 'planner'] as const)(
  'another agency’s webhook is a 404 to an %s, the same as one that does not exist, for reading and changing',
  async (role) => {
    const user = new FormClient(api.url);
    await user.signIn(a[role].email);
    await user.get('/settings');
    const theirs = await user.get(`/settings/webhooks/${otherWebhookId}`);
    const missing = await user.get('/settings/webhooks/whk_doesnotexist');
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(theirs.body).toBe(missing.body);
    for (const action of ['/disable', '/rotate-secret', '']) {
      const res = await user.post(`/settings/webhooks/${otherWebhookId}${action}`, {
        url: 'https://evil.example/',
        events: 'trip.created',
        overlap_seconds: '0',
      });
      expect(res.status).toBe(404);
    }
    const row = await t.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', otherWebhookId)
      .executeTakeFirstOrThrow();
    expect([row.url, row.disabled_at]).toEqual(['https://b.example/hooks', null]);
  },
);

test('an owner creates a key shown once, saves its scopes and revokes it; each change is audited', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const created = await owner.follow(
    await owner.post('/settings/keys', {
      name: 'Booking sync',
      scopes: ['trips:read', 'events:read'],
    }),
  );
  expect(created.status).toBe(200);
  expect(created.headers.get('cache-control')).toBe('no-store');
  const key = /<output aria-label="[^"]*">([^<]+)<\/output>/.exec(created.body)![1]!;
  const trips = await fetch(`${api.url}/api/v1/trips`, { headers: { authorization: `Bearer ${key}` } });
  expect(trips.status).toBe(200);
  // The access log names each request's whole path, under either mount.
  expect(api.logs.text()).toContain('"path":"/settings/keys"');
  expect(api.logs.text()).toContain('"path":"/api/v1/trips"');
  const keyId = (
    await t.db
      .selectFrom('api_keys')
      .select('id')
      .where('name', '=', 'Booking sync')
      .executeTakeFirstOrThrow()
  ).id;

  const overview = await owner.get('/settings');
  expect(overview.body).not.toContain(key);
  const saved = await owner.post(`/settings/keys/${keyId}/scopes`, {
    scopes: ['trips:read', 'payments:read'],
  });
  expect(saved.headers.get('location')).toBe('/settings?notice=scopes-saved');
  const scopes = await t.db
    .selectFrom('api_keys')
    .select('scopes')
    .where('id', '=', keyId)
    .executeTakeFirstOrThrow();
  expect(scopes.scopes.sort()).toEqual(['payments:read', 'trips:read']);
  const none = await owner.post(`/settings/keys/${keyId}/scopes`, {});
  expect(none.status).toBe(400);
  expect(none.body).toContain('a key keeps at least one scope');

  await owner.post(`/settings/keys/${keyId}/revoke`, {});
  const after = await fetch(`${api.url}/api/v1/trips`, { headers: { authorization: `Bearer ${key}` } });
  expect(after.status).toBe(401);

  const audit = await t.db
    .selectFrom('audit_log')
    .selectAll()
    .where('object_id', '=', keyId)
    .orderBy('id')
    .execute();
  expect(audit.map((e) => [e.action, e.actor])).toEqual([
    ['api_key.created', a.owner.email],
    ['api_key.scopes_added', a.owner.email],
    ['api_key.scopes_removed', a.owner.email],
    ['api_key.revoked', a.owner.email],
  ]);
  expect(JSON.stringify(audit)).not.toContain(key);
});

test('bad webhook input gets the module’s clear message, keeps what was typed, and changes nothing', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const [webhooks, audit] = [await count('webhooks'), await count('audit_log')];
  const cases: [Record<string, string | string[]>, string][] = [
    [{ url: 'http://hooks.example/x', events: 'trip.created' }, 'a webhook URL must be https'],
    [
      { url: 'https://10.0.0.7/x', events: 'trip.created' },
      '10.0.0.7 is a private address: deliveries never go to loopback, private or link-local addresses',
    ],
    // Outside production the refusal names the setting a developer would look for.
    [{ url: 'https://127.0.0.1:8443/x', events: 'trip.created' }, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS=true'],
    [{ url: 'https://hooks.example/x', events: ['trip.created', 'trip.exploded'] }, 'unknown event type'],
    [{ url: 'https://hooks.example/x' }, 'event type'],
  ];
  for (const [fields, message] of cases) {
    const res = await owner.post('/settings/webhooks', { description: 'Our CRM', ...fields });
    expect(res.status).toBe(400);
    expect(res.body).toContain(message);
    expect(res.body).toContain('value="Our CRM"');
  }
  expect([await count('webhooks'), await count('audit_log')]).toEqual([webhooks, audit]);
});

test('a rate limit that is not a whole number from 1 to 1000 is refused on both forms, kept as typed; nothing changes', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const created = await owner.post('/settings/webhooks', {
    url: 'https://crm.example/limited',
    events: 'trip.created',
    rate_limit: '50',
  });
  const id = /href="\/settings\/webhooks\/(whk_\w+)"/.exec((await owner.follow(created)).body)![1]!;
  const rateLimit = async () =>
    (await t.db.selectFrom('webhooks').select('rate_limit').where('id', '=', id).executeTakeFirstOrThrow())
      .rate_limit;
  expect(await rateLimit()).toBe(50);
  const [webhooks, audit] = [await count('webhooks'), await count('audit_log')];
  const rule = 'a rate limit is a whole number of deliveries a second from 1 to 1000, or off for none.';
  for (const typed of ['0', '1001', '1.5', 'ten']) {
    const add = await owner.post('/settings/webhooks', {
      url: 'https://crm.example/other',
      events: 'trip.created',
      rate_limit: typed,
    });
    expect(add.status).toBe(400);
    expect(add.body).toContain(rule);
    expect(add.body).toMatch(new RegExp(`id="webhook-rate-limit"[^>]*value="${typed.replace('.', '\\.')}"`));
    await owner.get(`/settings/webhooks/${id}`);
    const change = await owner.post(`/settings/webhooks/${id}`, {
      url: 'https://crm.example/limited',
      events: 'trip.created',
      rate_limit: typed,
    });
    expect(change.status).toBe(400);
    expect(change.body).toContain(rule);
    expect(change.body).toMatch(new RegExp(`id="edit-rate-limit"[^>]*value="${typed.replace('.', '\\.')}"`));
  }
  expect([await count('webhooks'), await count('audit_log'), await rateLimit()]).toEqual([
    webhooks,
    audit,
    50,
  ]);
});

test('what an owner typed is shown as text, never as markup', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const created = await owner.post('/settings/webhooks', {
    url: 'https://hooks.example/x?a=1&b=<i>',
    description: '<script>alert("x")</script>',
    events: 'trip.created',
  });
  expect(created.status).toBe(303);
  const overview = await owner.get('/settings');
  expect(overview.body).not.toContain('<script>alert');
  expect(overview.body).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
});

test('a body too large or not a form is a clear 4xx, never a 500', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  const big = await owner.post('/settings/keys', { name: 'x'.repeat(40_000), scopes: 'trips:read' });
  expect(big.status).toBe(413);
  expect(big.body).toContain('The form could not be read');
});

test('an owner changes a webhook, switches it off and on; the forms keep what was typed when refused', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const created = await owner.post('/settings/webhooks', {
    url: 'https://crm.example/hooks',
    events: 'trip.created',
  });
  const id = /href="\/settings\/webhooks\/(whk_\w+)"/.exec((await owner.follow(created)).body)![1]!;
  await owner.get(`/settings/webhooks/${id}`);

  const changed = await owner.post(`/settings/webhooks/${id}`, {
    url: 'https://crm.example/v2/hooks',
    events: ['trip.created', 'payment.paid'],
    description: 'CRM v2',
  });
  expect(changed.headers.get('location')).toBe(`/settings/webhooks/${id}?notice=webhook-updated`);
  const refused = await owner.post(`/settings/webhooks/${id}`, {
    url: 'http://crm.example/v3',
    events: 'trip.created',
  });
  expect(refused.status).toBe(400);
  expect(refused.body).toContain('value="http://crm.example/v3"');

  expect((await owner.post(`/settings/webhooks/${id}/disable`, {})).status).toBe(303);
  const off = await owner.get(`/settings/webhooks/${id}`);
  expect(off.body).toContain('Switch back on');
  expect((await owner.post(`/settings/webhooks/${id}/enable`, {})).status).toBe(303);

  const row = await t.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  expect([row.url, row.event_types, row.description, row.disabled_at]).toEqual([
    'https://crm.example/v2/hooks',
    ['trip.created', 'payment.paid'],
    'CRM v2',
    null,
  ]);
  const audit = await t.db
    .selectFrom('audit_log')
    .select('action')
    .where('object_id', '=', id)
    .orderBy('id')
    .execute();
  expect(audit.map((e) => e.action)).toEqual([
    'webhook.created',
    'webhook.updated',
    'webhook.disabled',
    'webhook.enabled',
  ]);
});

test('without the dispatcher’s queue, a test event or redelivery answers 503 without internal names, and nothing is audited', async () => {
  const owner = new FormClient(api.url);
  await owner.signIn(a.owner.email);
  await owner.get('/settings');
  const created = await owner.post('/settings/webhooks', {
    url: 'https://erp.example/hooks',
    events: 'trip.created',
  });
  const id = /href="\/settings\/webhooks\/(whk_\w+)"/.exec((await owner.follow(created)).body)![1]!;
  await owner.get(`/settings/webhooks/${id}`);
  const audit = await count('audit_log');
  const test = await owner.post(`/settings/webhooks/${id}/test`, {});
  expect(test.status).toBe(503);
  expect(test.body).toContain('our delivery service is unreachable. Nothing was sent; try again later.');
  // The queue's name is for the platform team's log, not for the owner's page.
  expect(test.body).not.toContain('trips.dispatcher');
  expect(api.logs.text()).toMatch(/does not exist; is the dispatcher running/);
  const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
  const redeliver = await owner.post(`/settings/webhooks/${id}/redeliver`, { since });
  expect(redeliver.status).toBe(503);
  for (const since of ['yesterday', '2026-02-30T10:00']) {
    const badTime = await owner.post(`/settings/webhooks/${id}/redeliver`, { since });
    expect(badTime.status).toBe(400);
    expect(badTime.body).toContain('give the time to redeliver from');
  }
  const tooOld = await owner.post(`/settings/webhooks/${id}/redeliver`, { since: '2020-01-01T00:00' });
  expect(tooOld.status).toBe(400);
  expect(tooOld.body).toContain('outside the retention window');
  expect(await count('audit_log')).toBe(audit);
});
