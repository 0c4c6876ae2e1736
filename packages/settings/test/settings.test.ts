import { sql } from 'kysely';
import type { DeliveryMessage } from '@trips/contracts';
import { findDeliveryTarget } from '@trips/db/webhooks';
import { waitFor, type TestDatabase } from '@trips/testkit';
import { checkWebhookUrl, PLATFORM, verifyPassword, type Settings } from '../src/index.ts';
import {
  auditOf as auditRowsOf,
  newAgencyIn,
  newWebhookIn,
  refused,
  settingsStack,
  type Agency,
  type SettingsStack,
} from './support.ts';

let stack: SettingsStack;
let t: TestDatabase;
let settings: Settings;
let received: DeliveryMessage[];

beforeAll(async () => {
  stack = await settingsStack();
  ({ t, settings, received } = stack);
});
afterAll(() => stack?.close());

const newAgency = () => newAgencyIn(t);
const auditOf = (agencyId: string) => auditRowsOf(t, agencyId);
const newWebhook = (a: Agency, eventTypes?: string[]) => newWebhookIn(settings, a, eventTypes);
const webhookRow = (id: string) =>
  t.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const keyRow = (id: string) =>
  t.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

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
    ['localhost with two root dots', 'https://localhost../', /not a URL: its host name localhost\.\. has/],
    ['a name with an empty label', 'https://hooks..fairway.example/', /not a URL/],
    ['a name starting with a dot', 'https://.fairway.example/', /not a URL/],
    ['a name with a label over 63 characters', `https://${'a'.repeat(64)}.example/`, /not a URL/],
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
    await refused(
      settings.setPassword(PLATFORM, a.owner.userId, 'correct\thorse battery'),
      'invalid',
      /control character/,
    );
  });
});
