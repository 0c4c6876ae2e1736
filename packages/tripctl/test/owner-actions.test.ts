import { Readable } from 'node:stream';
import { sql } from 'kysely';
import type { DeliveryMessage } from '@trips/contracts';
import { findDeliveryTarget } from '@trips/db/webhooks';
import { verifyPassword } from '@trips/settings';
import { waitFor, type TestDatabase } from '@trips/testkit';
import { run } from '../src/program.ts';
import { cli, cliJson, deliveriesStack, type DeliveriesStack } from './helpers.ts';

let stack: DeliveriesStack;
let t: TestDatabase;
let env: Record<string, string>;
let received: DeliveryMessage[];

beforeAll(async () => {
  stack = await deliveriesStack();
  ({ t, env, received } = stack);
});
afterAll(() => stack?.close());

const auditOf = (agencyId: string) =>
  t.db.selectFrom('audit_log').selectAll().where('agency_id', '=', agencyId).orderBy('id').execute();

async function setup() {
  const agency = (await cliJson<{ id: string }>(['agency', 'create', '--name', 'Fairway Tours'], env)).id;
  const webhook = await cliJson<{ id: string; secret: string }>(
    [
      'webhook',
      'create',
      '--agency',
      agency,
      '--url',
      'https://hooks.fairway.example/',
      '--events',
      'trip.created',
    ],
    env,
  );
  return { agency, webhook };
}

test('webhook update, rotate-secret (both sign during the overlap), test: done and audited as platform', async () => {
  const { agency, webhook } = await setup();
  const updated = await cliJson(
    [
      'webhook',
      'update',
      '--id',
      webhook.id,
      '--url',
      'https://hooks.fairway.example/v2',
      '--events',
      'trip.created,trip.deleted',
    ],
    env,
  );
  expect(updated).toMatchObject({
    url: 'https://hooks.fairway.example/v2',
    events: ['trip.created', 'trip.deleted'],
  });

  const rotated = await cliJson<{ secret: string; previous_secrets_expire_at: string }>(
    ['webhook', 'rotate-secret', '--id', webhook.id, '--overlap', '1h'],
    env,
  );
  expect(rotated.secret).toMatch(/^whsec_/);
  expect((await findDeliveryTarget(t.db, webhook.id))!.secrets).toEqual([rotated.secret, webhook.secret]);
  const human = await cli(['webhook', 'rotate-secret', '--id', webhook.id, '--overlap', '0s'], env);
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(/will not be shown again/);
  expect((await findDeliveryTarget(t.db, webhook.id))!.secrets).toHaveLength(1);

  const sent = await cliJson<{ event: { id: string } }>(['webhook', 'test', '--id', webhook.id], env);
  await waitFor(() => received.some((m) => m.event.id === sent.event.id), { timeoutMs: 5_000 });

  const audit = await auditOf(agency);
  expect(audit.map((r) => [r.action, r.actor, r.actor_user_id])).toEqual([
    ['webhook.created', 'platform', null],
    ['webhook.updated', 'platform', null],
    ['webhook.secret_rotated', 'platform', null],
    ['webhook.secret_rotated', 'platform', null],
    ['webhook.test_sent', 'platform', null],
  ]);
});

test('webhook update refuses a private address (exit 2) and changes nothing', async () => {
  const { agency, webhook } = await setup();
  const result = await cli(['webhook', 'update', '--id', webhook.id, '--url', 'https://192.168.1.10/'], env);
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(
    /192.168.1.10 is a private address: deliveries never go to loopback, private or link-local addresses.*WEBHOOK_ALLOW_PRIVATE_NETWORKS=true/,
  );
  expect((await auditOf(agency)).map((r) => r.action)).toEqual(['webhook.created']);
});

test('webhook redeliver: plain counts off a terminal, the events arrive; outside retention refused', async () => {
  const { agency, webhook } = await setup();
  const ids: string[] = [];
  for (const hoursAgo of [3, 2, 1]) {
    const r = await sql<{ id: string }>`
      INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
      VALUES (nextval('events_seq'), gen_id('evt'), ${agency}, 'trip.created', 'trip', 'trp_A', '{}'::jsonb,
              now() - make_interval(hours => ${hoursAgo})) RETURNING id`.execute(t.db);
    ids.push(r.rows[0]!.id);
  }
  const result = await cli(['webhook', 'redeliver', '--id', webhook.id, '--since', '6h'], env);
  expect(result.code).toBe(0);
  expect(result.stderr).toBe('redelivered 0/3\nredelivered 3/3\n');
  expect(result.stdout).toMatch(/Queued 3 events since/);
  await waitFor(() => received.filter((m) => m.webhook_id === webhook.id).length === 3, { timeoutMs: 5_000 });
  expect(received.filter((m) => m.webhook_id === webhook.id).map((m) => m.event.id)).toEqual(ids);

  const old = await cli(['webhook', 'redeliver', '--id', webhook.id, '--since', '3d', '--json'], env);
  expect(old.code).toBe(2);
  expect(old.stderr).toMatch(/retention/);
  expect((await auditOf(agency)).map((r) => r.action)).toEqual(['webhook.created', 'webhook.redelivered']);
});

test('on a terminal, redeliver draws a progress bar on stderr', async () => {
  const { webhook } = await setup();
  let stderr = '';
  const code = await run(['webhook', 'redeliver', '--id', webhook.id, '--since', '1h', '--json'], {
    stdout: { write: () => true },
    stderr: { write: (s: string) => (stderr += s), isTTY: true },
    env,
  });
  expect(code).toBe(0);
  expect(stderr).toMatch(/\r\[#{30}\] 0\/0 redelivered\n$/);
});

test('key list and key scopes --add/--remove, audited; unknown scope exits 2', async () => {
  const { agency } = await setup();
  const key = await cliJson<{ id: string; key: string }>(
    ['key', 'create', '--agency', agency, '--scopes', 'trips:read'],
    env,
  );
  expect(
    await cliJson(
      ['key', 'scopes', key.id, '--add', 'events:read,payments:read', '--remove', 'trips:read'],
      env,
    ),
  ).toMatchObject({
    scopes: ['events:read', 'payments:read'],
  });
  const listed = await cli(['key', 'list', '--agency', agency, '--json'], env);
  expect(JSON.parse(listed.stdout).keys).toEqual([
    expect.objectContaining({
      id: key.id,
      scopes: ['events:read', 'payments:read'],
      revoked_at: null,
      last_used_at: null,
    }),
  ]);
  expect(listed.stdout).not.toContain(key.key);
  expect((await cli(['key', 'scopes', key.id, '--add', 'admin'], env)).code).toBe(2);
  expect((await auditOf(agency)).map((r) => r.action)).toEqual([
    'webhook.created',
    'api_key.created',
    'api_key.scopes_added',
    'api_key.scopes_removed',
  ]);
});

test('user set-password reads stdin, stores scrypt, never prints or audits the password', async () => {
  const { agency } = await setup();
  await cliJson(
    ['user', 'create', '--agency', agency, '--email', 'owner@pw.example', '--role', 'owner'],
    env,
  );
  let stdout = '';
  let stderr = '';
  const code = await run(['user', 'set-password', 'Owner@PW.example', '--json'], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    stdin: Readable.from(['correct horse battery\n']),
    env,
  });
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(stdout)).toMatchObject({ email: 'owner@pw.example', password_set: true });
  const row = await t.db
    .selectFrom('users')
    .select('password_hash')
    .where('email', '=', 'owner@pw.example')
    .executeTakeFirstOrThrow();
  expect(await verifyPassword('correct horse battery', row.password_hash!)).toBe(true);
  expect(stdout).not.toContain('horse');
  expect(JSON.stringify(await auditOf(agency))).not.toContain('horse');
  expect((await auditOf(agency)).map((r) => r.action)).toEqual(['webhook.created', 'user.password_set']);
  const help = await cli(['user', 'set-password', '--help'], env);
  expect(help.stdout).not.toMatch(/--password/);
});
