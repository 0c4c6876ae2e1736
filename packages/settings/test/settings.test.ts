import { createServer, type AddressInfo, type Socket } from 'node:net';
import amqplib from 'amqplib';
import { sql } from 'kysely';
import { topology } from '@trips/broker';
import { isValid, type DeliveryMessage } from '@trips/contracts';
import { createAgency } from '@trips/db/agencies';
import { ensureEventPartitions } from '@trips/db/events';
import { createUser } from '@trips/db/users';
import { findDeliveryTarget } from '@trips/db/webhooks';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  waitFor,
  type TestDatabase,
} from '@trips/testkit';
import {
  checkWebhookUrl,
  createSettings,
  PLATFORM,
  SettingsError,
  verifyPassword,
  type Settings,
} from '../src/index.ts';

let t: TestDatabase;
let settings: Settings;
const prefix = randomAmqpPrefix();
const queue = topology(prefix, []).deliveriesQueue;
let connection: amqplib.ChannelModel;
const received: DeliveryMessage[] = [];

beforeAll(async () => {
  t = await createTestDatabase();
  settings = createSettings({
    db: t.db,
    amqpUrls: [amqpUrl],
    amqpPrefix: prefix,
    eventRetentionMs: 2 * 86_400_000,
  });
  await ensureEventPartitions(t.db, new Date(Date.now() - 4 * 86_400_000), 6);
  // Stand in for the dispatcher: its deliveries queue, consumed here.
  connection = await amqplib.connect(amqpUrl);
  const ch = await connection.createChannel();
  await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    expect(msg.properties.deliveryMode).toBe(2);
    received.push(JSON.parse(msg.content.toString('utf8')) as DeliveryMessage);
    ch.ack(msg);
  });
});
afterAll(async () => {
  await connection?.close().catch(() => {});
  await deleteAmqpObjects({ queues: [queue] });
  await t.drop();
});

interface Agency {
  id: string;
  owner: { userId: string };
  planner: { userId: string };
}

let n = 0;
async function newAgency(): Promise<Agency> {
  const agency = await createAgency(t.db, { name: 'Fairway Tours' });
  n += 1;
  const owner = await createUser(t.db, {
    agencyId: agency.id,
    email: `owner${n}@fairway.example`,
    role: 'owner',
  });
  const planner = await createUser(t.db, {
    agencyId: agency.id,
    email: `planner${n}@fairway.example`,
    role: 'planner',
  });
  return { id: agency.id, owner: { userId: owner.id }, planner: { userId: planner.id } };
}

const auditOf = (agencyId: string) =>
  t.db.selectFrom('audit_log').selectAll().where('agency_id', '=', agencyId).orderBy('id').execute();
const webhookRow = (id: string) =>
  t.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const keyRow = (id: string) =>
  t.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

async function refused(promise: Promise<unknown>, code: string, message?: RegExp): Promise<SettingsError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SettingsError);
  expect((error as SettingsError).code).toBe(code);
  if (message) expect((error as SettingsError).message).toMatch(message);
  return error as SettingsError;
}

const newWebhook = (a: Agency, eventTypes = ['trip.created', 'payment.paid']) =>
  settings.createWebhook(a.owner, { agencyId: a.id, url: 'https://hooks.fairway.example/t', eventTypes });

describe('a planner is refused with forbidden, nothing changes and nothing is audited', () => {
  test('every action', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    const key = await settings.createKey(a.owner, { agencyId: a.id, scopes: ['trips:read'] });
    const webhookBefore = await webhookRow(webhook.id);
    const keyBefore = await keyRow(key.id);
    const auditBefore = await auditOf(a.id);
    const p = a.planner;
    const since = new Date(Date.now() - 3600_000);
    const attempts: [string, () => Promise<unknown>][] = [
      ['createKey', () => settings.createKey(p, { agencyId: a.id, scopes: ['trips:read'] })],
      ['listKeys', () => settings.listKeys(p, a.id)],
      ['addKeyScopes', () => settings.addKeyScopes(p, key.id, ['events:read'])],
      ['removeKeyScopes', () => settings.removeKeyScopes(p, key.id, ['trips:read'])],
      ['revokeKey', () => settings.revokeKey(p, key.id)],
      [
        'createWebhook',
        () =>
          settings.createWebhook(p, {
            agencyId: a.id,
            url: 'https://x.example/',
            eventTypes: ['trip.created'],
          }),
      ],
      ['listWebhooks', () => settings.listWebhooks(p, a.id)],
      ['updateWebhook', () => settings.updateWebhook(p, webhook.id, { url: 'https://evil.example/' })],
      ['disable', () => settings.setWebhookEnabled(p, webhook.id, false)],
      ['rotateSecret', () => settings.rotateSecret(p, webhook.id)],
      ['listAttempts', () => settings.listAttempts(p, webhook.id)],
      ['sendTestEvent', () => settings.sendTestEvent(p, webhook.id)],
      ['redeliver', () => settings.redeliver(p, webhook.id, { since })],
      ['setPassword of the owner', () => settings.setPassword(p, a.owner.userId, 'correct horse battery')],
    ];
    for (const [what, action] of attempts) {
      const error = await refused(action(), 'forbidden', /only an owner/);
      expect({ what, code: error.code }).toEqual({ what, code: 'forbidden' });
    }
    // To an owner or a planner of another agency, this agency's objects are as missing ones (D1).
    const other = await newAgency();
    for (const outsider of [other.owner, other.planner]) {
      await refused(settings.setWebhookEnabled(outsider, webhook.id, false), 'not_found');
      await refused(settings.revokeKey(outsider, key.id), 'not_found');
      await refused(settings.listKeys(outsider, a.id), 'not_found');
    }

    expect(await webhookRow(webhook.id)).toEqual(webhookBefore);
    expect(await keyRow(key.id)).toEqual(keyBefore);
    expect(await auditOf(a.id)).toEqual(auditBefore);
    expect(
      await t.db.selectFrom('api_keys').select('id').where('agency_id', '=', a.id).execute(),
    ).toHaveLength(1);
    expect(
      await t.db.selectFrom('webhooks').select('id').where('agency_id', '=', a.id).execute(),
    ).toHaveLength(1);
    expect(received.filter((m) => m.webhook_id === webhook.id)).toEqual([]);
  });
});

describe('keys', () => {
  test('create (key once), list, add and remove scopes, revoke: each audited, never the key', async () => {
    const a = await newAgency();
    const created = await settings.createKey(a.owner, {
      agencyId: a.id,
      scopes: ['trips:read'],
      name: 'CRM',
    });
    expect(created.key).toMatch(/^tps_[0-9A-Za-z]{32,}$/);
    expect(created.prefix).toBe(created.key.slice(0, 12));

    const listed = await settings.listKeys(a.owner, a.id);
    expect(listed).toEqual([
      {
        id: created.id,
        name: 'CRM',
        prefix: created.prefix,
        scopes: ['trips:read'],
        created_at: expect.any(Date),
        last_used_at: null,
        revoked_at: null,
      },
    ]);
    expect(JSON.stringify(listed)).not.toContain(created.key);

    expect((await settings.addKeyScopes(a.owner, created.id, ['events:read', 'trips:read'])).scopes).toEqual([
      'trips:read',
      'events:read',
    ]);
    expect((await settings.removeKeyScopes(a.owner, created.id, ['trips:read'])).scopes).toEqual([
      'events:read',
    ]);
    expect((await keyRow(created.id)).scopes).toEqual(['events:read']);
    const revoked = await settings.revokeKey(a.owner, created.id);
    expect(revoked.revoked_at).toBeInstanceOf(Date);
    expect((await keyRow(created.id)).revoked_at).toBeInstanceOf(Date);

    const audit = await auditOf(a.id);
    expect(audit.map((r) => [r.action, r.object_type, r.object_id, r.actor_user_id, r.actor])).toEqual([
      ['api_key.created', 'api_key', created.id, a.owner.userId, expect.stringMatching(/^owner\d+@/)],
      ['api_key.scopes_added', 'api_key', created.id, a.owner.userId, expect.any(String)],
      ['api_key.scopes_removed', 'api_key', created.id, a.owner.userId, expect.any(String)],
      ['api_key.revoked', 'api_key', created.id, a.owner.userId, expect.any(String)],
    ]);
    expect(audit[1]!.details).toEqual({ added: ['events:read'], scopes: ['trips:read', 'events:read'] });
    for (const r of audit) expect(r.created_at).toBeInstanceOf(Date);
    expect(JSON.stringify(audit)).not.toContain(created.key);
  });

  test('scopes added and removed in one change: both or neither, each audited', async () => {
    const a = await newAgency();
    const key = await settings.createKey(a.owner, { agencyId: a.id, scopes: ['trips:read'] });
    const swapped = await settings.changeKeyScopes(a.owner, key.id, {
      add: ['events:read', 'payments:read'],
      remove: ['trips:read'],
    });
    expect(swapped.scopes).toEqual(['events:read', 'payments:read']);
    expect((await auditOf(a.id)).slice(1).map((r) => [r.action, r.details])).toEqual([
      [
        'api_key.scopes_added',
        { added: ['events:read', 'payments:read'], scopes: ['events:read', 'payments:read'] },
      ],
      ['api_key.scopes_removed', { removed: ['trips:read'], scopes: ['events:read', 'payments:read'] }],
    ]);

    // A change that would leave no scope is refused whole: the addition in it is not kept either,
    // as it would be if the two halves were made one after the other.
    const before = await auditOf(a.id);
    await refused(
      settings.changeKeyScopes(a.owner, key.id, {
        add: ['contacts:read'],
        remove: ['events:read', 'payments:read', 'contacts:read'],
      }),
      'invalid',
      /at least one scope/,
    );
    expect((await keyRow(key.id)).scopes).toEqual(['events:read', 'payments:read']);
    expect(await auditOf(a.id)).toEqual(before);
  });

  test('unknown scopes, removing the last scope, an unknown key: refused, nothing changes', async () => {
    const a = await newAgency();
    const key = await settings.createKey(a.owner, { agencyId: a.id, scopes: ['trips:read'] });
    const before = await auditOf(a.id);
    await refused(
      settings.createKey(a.owner, { agencyId: a.id, scopes: ['trips:write'] }),
      'invalid',
      /'trips:write'/,
    );
    await refused(settings.addKeyScopes(a.owner, key.id, ['admin']), 'invalid', /unknown scope 'admin'/);
    await refused(settings.removeKeyScopes(a.owner, key.id, ['trips:read']), 'invalid', /at least one scope/);
    await refused(
      settings.addKeyScopes(a.owner, 'key_0000000000000000', ['trips:read']),
      'not_found',
      /no key/,
    );
    await refused(
      settings.createKey(a.owner, { agencyId: 'agy_0000000000000000', scopes: ['trips:read'] }),
      'not_found',
    );
    expect((await keyRow(key.id)).scopes).toEqual(['trips:read']);
    expect(await auditOf(a.id)).toEqual(before);
    expect(await settings.listKeys(a.owner, a.id)).toHaveLength(1);
  });
});

describe('webhooks', () => {
  test('enabling a webhook that is on, or disabling one that is off, changes nothing and is not audited', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    await sql`UPDATE webhooks SET failing_since = now() - interval '1 day', warned_at = now() WHERE id = ${webhook.id}`.execute(
      t.db,
    );
    const before = await webhookRow(webhook.id);
    const audited = await auditOf(a.id);
    // Enabling again keeps the failure streak: else an owner (or a script) enabling again and
    // again would put the switch-off off for ever. Only switching back on resets it.
    expect(await settings.setWebhookEnabled(a.owner, webhook.id, true)).toMatchObject({ state: 'failing' });
    expect(await webhookRow(webhook.id)).toEqual(before);

    await settings.setWebhookEnabled(a.owner, webhook.id, false);
    const off = await webhookRow(webhook.id);
    expect(await settings.setWebhookEnabled(a.owner, webhook.id, false)).toMatchObject({ state: 'disabled' });
    expect(await webhookRow(webhook.id)).toEqual(off); // the same epoch: nothing dropped again
    expect((await auditOf(a.id)).slice(audited.length).map((r) => r.action)).toEqual(['webhook.disabled']);
  });

  test('create (secret once), update, disable and enable (streak reset), list: each audited', async () => {
    const a = await newAgency();
    const { webhook, secret } = await newWebhook(a);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(webhook).toMatchObject({ state: 'active', events: ['trip.created', 'payment.paid'] });

    const updated = await settings.updateWebhook(a.owner, webhook.id, {
      url: 'https://hooks.fairway.example/v2',
      eventTypes: ['trip.deleted'],
    });
    expect(updated).toMatchObject({ url: 'https://hooks.fairway.example/v2', events: ['trip.deleted'] });

    await sql`UPDATE webhooks SET failing_since = now() - interval '1 day', warned_at = now() WHERE id = ${webhook.id}`.execute(
      t.db,
    );
    expect((await settings.setWebhookEnabled(a.owner, webhook.id, false)).state).toBe('disabled');
    expect((await settings.listWebhooks(a.owner, a.id)).map((w) => w.state)).toEqual(['disabled']);
    const on = await settings.setWebhookEnabled(a.owner, webhook.id, true);
    expect(on).toMatchObject({ state: 'active', failing_since: null });
    expect(await webhookRow(webhook.id)).toMatchObject({
      failing_since: null,
      warned_at: null,
      disabled_at: null,
    });

    const audit = await auditOf(a.id);
    expect(audit.map((r) => r.action)).toEqual([
      'webhook.created',
      'webhook.updated',
      'webhook.disabled',
      'webhook.enabled',
    ]);
    expect(audit[1]!.details).toEqual({
      url: { from: 'https://hooks.fairway.example/t', to: 'https://hooks.fairway.example/v2' },
      event_types: { from: ['trip.created', 'payment.paid'], to: ['trip.deleted'] },
    });
    expect(audit[3]!.details).toEqual({ previous_state: 'disabled' });
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  test('a refused private URL names the setting that allows it only outside production', () => {
    const message = (nameDevelopmentSetting: boolean) => {
      try {
        checkWebhookUrl('https://10.0.0.1/x', { nameDevelopmentSetting });
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    expect(message(true)).toContain('WEBHOOK_ALLOW_PRIVATE_NETWORKS=true');
    expect(message(false)).not.toContain('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
    expect(message(false)).toContain('10.0.0.1 is a private address');
  });

  test.each([
    ['an http URL', 'http://hooks.fairway.example/', /https/],
    ['a URL with credentials', 'https://ops:hunter2@hooks.fairway.example/', /credentials/],
    ['a loopback address', 'https://127.0.0.1/hook', /127\.0\.0\.1 is a loopback address/],
    ['a private address', 'https://10.1.2.3:8443/hook', /10\.1\.2\.3 is a private address/],
    ['the metadata address', 'https://169.254.169.254/latest', /is a link-local address/],
    ['an IPv6 loopback', 'https://[::1]/hook', /is a loopback address/],
    ['an IPv4-mapped private address', 'https://[::ffff:192.168.0.1]/', /is a private address/],
    ['localhost', 'https://localhost:8443/', /is a loopback address/],
    ['localhost with the root dot', 'https://localhost./hook', /is a loopback address/],
    ['a name under localhost with the root dot', 'https://api.localhost./hook', /is a loopback address/],
    ['not a URL', 'hooks.fairway.example', /not a URL/],
  ])('%s is refused as invalid on create and update; nothing changes', async (_what, url, message) => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    const before = await auditOf(a.id);
    const error = await refused(
      settings.createWebhook(a.owner, { agencyId: a.id, url, eventTypes: ['trip.created'] }),
      'invalid',
      message,
    );
    expect(error.message).not.toContain('hunter2');
    await refused(settings.updateWebhook(a.owner, webhook.id, { url }), 'invalid', message);
    expect((await webhookRow(webhook.id)).url).toBe('https://hooks.fairway.example/t');
    expect(await settings.listWebhooks(a.owner, a.id)).toHaveLength(1);
    expect(await auditOf(a.id)).toEqual(before);
  });

  test('a public IP literal is accepted; unknown event types and webhooks are refused', async () => {
    const a = await newAgency();
    const ok = await settings.createWebhook(a.owner, {
      agencyId: a.id,
      url: 'https://8.8.8.8/x',
      eventTypes: ['trip.created'],
    });
    expect(ok.webhook.url).toBe('https://8.8.8.8/x');
    const before = await auditOf(a.id);
    await refused(
      settings.createWebhook(a.owner, {
        agencyId: a.id,
        url: 'https://h.example/',
        eventTypes: ['trip.exploded'],
      }),
      'invalid',
      /unknown event type 'trip\.exploded'/,
    );
    await refused(settings.updateWebhook(a.owner, ok.webhook.id, { eventTypes: [] }), 'invalid');
    await refused(
      settings.setWebhookEnabled(a.owner, 'whk_0000000000000000', true),
      'not_found',
      /no webhook/,
    );
    expect(await auditOf(a.id)).toEqual(before);
    expect((await webhookRow(ok.webhook.id)).event_types).toEqual(['trip.created']);
  });

  test('rotate: both secrets sign until the overlap ends, then only the new one', async () => {
    const a = await newAgency();
    const { webhook, secret: old } = await newWebhook(a);
    const rotated = await settings.rotateSecret(a.owner, webhook.id, { overlapMs: 2_000 });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(old);
    expect((await findDeliveryTarget(t.db, webhook.id))!.secrets).toEqual([rotated.secret, old]);
    expect((await settings.getWebhook(a.owner, webhook.id)).secrets).toHaveLength(2);
    const audit = await auditOf(a.id);
    expect(audit.at(-1)).toMatchObject({ action: 'webhook.secret_rotated', details: { overlap_seconds: 2 } });
    expect(JSON.stringify(audit)).not.toContain(rotated.secret);
    await waitFor(async () => (await findDeliveryTarget(t.db, webhook.id))!.secrets.length === 1, {
      timeoutMs: 5_000,
    });
    expect((await findDeliveryTarget(t.db, webhook.id))!.secrets).toEqual([rotated.secret]);
  });

  test('rotate with the default overlap keeps the old secret for 24 hours', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    const rotated = await settings.rotateSecret(a.owner, webhook.id);
    const hours = (rotated.previous_secrets_expire_at.getTime() - Date.now()) / 3600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    await refused(settings.rotateSecret(a.owner, webhook.id, { overlapMs: -1 }), 'invalid');
  });
});

describe('test events and redelivery reach the deliveries queue', () => {
  test('a test event is a valid DeliveryMessage for that webhook only, and audited', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a, ['trip.status_changed', 'trip.created']);
    const result = await settings.sendTestEvent(a.owner, webhook.id);
    expect(result.event.id).toMatch(/^evt_test_/);
    await waitFor(() => received.some((m) => m.event.id === result.event.id), { timeoutMs: 5_000 });
    const message = received.find((m) => m.event.id === result.event.id)!;
    expect(isValid('DeliveryMessage', message)).toBe(true);
    expect(message).toMatchObject({ webhook_id: webhook.id, agency_id: a.id, epoch: 1, attempt: 1 });
    expect(message.event).toMatchObject({
      type: 'trip.status_changed',
      related_object: { type: 'trip', id: 'trp_test' },
    });
    expect((await auditOf(a.id)).at(-1)).toMatchObject({
      action: 'webhook.test_sent',
      details: { event_id: result.event.id, event_type: 'trip.status_changed' },
    });
  });

  test('redeliver sends the events since a time, of the webhook types, oldest first, with progress', async () => {
    const a = await newAgency();
    const other = await newAgency();
    const { webhook } = await newWebhook(a, ['trip.created', 'payment.paid']);
    const insert = (agencyId: string, type: string, objectType: string, hoursAgo: number) =>
      sql<{ id: string }>`
        INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
        VALUES (nextval('events_seq'), gen_id('evt'), ${agencyId}, ${type}, ${objectType}, ${`${objectType === 'trip' ? 'trp' : 'pay'}_X${hoursAgo}`},
                '{}'::jsonb, now() - make_interval(hours => ${hoursAgo}))
        RETURNING id`
        .execute(t.db)
        .then((r) => r.rows[0]!.id);
    await insert(a.id, 'trip.created', 'trip', 30); // before since
    const e1 = await insert(a.id, 'trip.created', 'trip', 20);
    await insert(a.id, 'trip.deleted', 'trip', 10); // not subscribed
    await insert(other.id, 'trip.created', 'trip', 5); // another agency
    const e2 = await insert(a.id, 'payment.paid', 'payment', 2);

    const progress: { done: number; total: number }[] = [];
    const result = await settings.redeliver(a.owner, webhook.id, {
      since: new Date(Date.now() - 24 * 3600_000),
      onProgress: (p) => progress.push(p),
    });
    expect(result.events).toBe(2);
    expect(progress[0]).toEqual({ done: 0, total: 2 });
    expect(progress.at(-1)).toEqual({ done: 2, total: 2 });
    await waitFor(() => received.filter((m) => m.webhook_id === webhook.id).length >= 2, {
      timeoutMs: 5_000,
    });
    const mine = received.filter((m) => m.webhook_id === webhook.id);
    expect(mine.map((m) => m.event.id)).toEqual([e1, e2]);
    for (const m of mine) expect(isValid('DeliveryMessage', m)).toBe(true);
    expect((await auditOf(a.id)).at(-1)).toMatchObject({
      action: 'webhook.redelivered',
      details: { events: 2 },
    });
  });

  test('since outside the retention window, or a switched-off webhook: refused, nothing published', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    const before = await auditOf(a.id);
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 3 * 86_400_000) }),
      'invalid',
      /retention/,
    );
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() + 60_000) }),
      'invalid',
    );
    await settings.setWebhookEnabled(a.owner, webhook.id, false);
    await refused(settings.sendTestEvent(a.owner, webhook.id), 'invalid', /switched off/);
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 60_000) }),
      'invalid',
    );
    expect((await auditOf(a.id)).length).toBe(before.length + 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(received.filter((m) => m.webhook_id === webhook.id)).toEqual([]);
  });

  test('a broker that never answers: unavailable within the timeout, and no transaction open meanwhile', async () => {
    // Accepts the connection and says nothing, as RabbitMQ blocked by an alarm says nothing to a
    // publisher; a transaction held across the wait would hold a pool connection and a lock on
    // events (and list sync, once it writes) for as long.
    const sockets: Socket[] = [];
    const mute = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const port = (mute.address() as AddressInfo).port;
    const silent = createSettings({
      db: t.db,
      amqpUrls: [`amqp://127.0.0.1:${port}`],
      brokerTimeoutMs: 1_000,
    });
    const openTransactions = async () => {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
      `.execute(t.db);
      return rows[0]!.n;
    };
    try {
      const a = await newAgency();
      const { webhook } = await newWebhook(a);
      const before = await auditOf(a.id);
      for (const attempt of [
        () => silent.sendTestEvent(a.owner, webhook.id),
        () => silent.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 60_000) }),
      ]) {
        const started = Date.now();
        const connected = sockets.length;
        const outcome = refused(attempt(), 'unavailable', /RabbitMQ/);
        await waitFor(() => sockets.length > connected);
        expect(await openTransactions()).toBe(0);
        await outcome;
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      expect(await auditOf(a.id)).toEqual(before);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => mute.close(resolve));
    }
  });
});

describe('passwords', () => {
  test('an owner sets a password: scrypt, self-describing, audited without it', async () => {
    const a = await newAgency();
    await settings.setPassword(a.owner, a.planner.userId, 'correct horse battery');
    const row = await t.db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', a.planner.userId)
      .executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(await verifyPassword('correct horse battery', row.password_hash!)).toBe(true);
    expect(await verifyPassword('wrong horse battery', row.password_hash!)).toBe(false);
    const audit = await auditOf(a.id);
    expect(audit.at(-1)).toMatchObject({
      action: 'user.password_set',
      object_id: a.planner.userId,
      details: {},
    });
    expect(JSON.stringify(audit)).not.toContain('horse');
    await refused(settings.setPassword(PLATFORM, a.owner.userId, 'short'), 'invalid', /10 to/);
  });
});
