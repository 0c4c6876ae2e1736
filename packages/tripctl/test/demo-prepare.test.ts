import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { findKeyCredentials, hashApiKey } from '@trips/db/api-keys';
import { findSession, insertSession } from '@trips/db/sessions';
import { findDeliveryTarget } from '@trips/db/webhooks';
import { verifyPassword } from '@trips/settings';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { run } from '../src/program.ts';
import { cli, cliJson } from './helpers.ts';

// `tripctl demo prepare`, what scripts/start.sh runs on every start (issue 40, item 7): a restart
// keeps the demo key (a running `trips listen` goes on), the owner's session and the webhook, and
// adds no second key or webhook.

interface Prepared {
  agency_id: string;
  owner_user_id: string;
  owner_email: string;
  key_id: string;
  key: string;
  curl: string;
  webhook_id: string;
  webhook_secret: string;
  made: { agency: boolean; key: boolean; webhook: boolean; password: boolean };
}

const PASSWORD = 'demo-owner-password';
const RECEIVER = 'https://localhost:4000/webhooks';
/** A settings-page session's token hash, as the table keeps it. */
const SESSION = 'a'.repeat(64);

let t: TestDatabase;
let env: Record<string, string>;
let dir: string;
let statePath: string;
beforeEach(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };
  dir = mkdtempSync(join(tmpdir(), 'trips-demo-state-'));
  statePath = join(dir, '.demo', 'demo.json');
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await t.drop();
});

/** start.sh's call: the password on stdin, the JSON on stdout. */
async function prepare(receiver = RECEIVER, password = PASSWORD): Promise<Prepared> {
  let stdout = '';
  let stderr = '';
  const code = await run(
    [
      'demo',
      'prepare',
      '--receiver-url',
      receiver,
      '--state',
      statePath,
      '--base-url',
      'http://localhost:3000',
      '--json',
    ],
    {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      stdin: Readable.from([`${password}\n`]),
      env,
    },
  );
  if (code !== 0) throw new Error(`demo prepare exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as Prepared;
}

const keysOf = (agencyId: string) =>
  t.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('agency_id', '=', agencyId).execute();
const webhooks = () => t.db.selectFrom('webhooks').select(['id', 'url', 'disabled_at']).execute();
const demoAgencies = () =>
  t.db.selectFrom('users').select('agency_id').where('email', 'like', '%@fairway-demo.example').execute();
const passwordSets = () =>
  t.db.selectFrom('audit_log').select('id').where('action', '=', 'user.password_set').execute();

/** What the API's authentication reads of a key: a live key of the agency, API on, subscribed. */
async function authenticates(key: string, agencyId: string): Promise<boolean> {
  const found = await findKeyCredentials(t.db, hashApiKey(key));
  return (
    found !== undefined &&
    !found.revoked &&
    found.agencyId === agencyId &&
    found.apiEnabled &&
    found.subscriptionStatus === 'active'
  );
}

test('run twice: the same key, webhook and session; nothing added, revoked or signed out', async () => {
  const first = await prepare();
  expect(first.made).toEqual({ agency: true, key: true, webhook: true, password: true });
  expect(statSync(statePath).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(statePath, 'utf8'))).toEqual({
    key: first.key,
    webhook_id: first.webhook_id,
    webhook_secret: first.webhook_secret,
  });
  // The owner signs in on the settings page between the runs.
  await insertSession(t.db, {
    tokenHash: SESSION,
    userId: first.owner_user_id,
    csrfToken: 'c'.repeat(32),
    expiresAt: new Date(Date.now() + 3600_000),
  });

  const second = await prepare();
  expect(second.made).toEqual({ agency: false, key: false, webhook: false, password: false });
  expect(second).toMatchObject({
    agency_id: first.agency_id,
    key_id: first.key_id,
    key: first.key,
    curl: first.curl,
    webhook_id: first.webhook_id,
    webhook_secret: first.webhook_secret,
  });
  expect(await demoAgencies()).toHaveLength(1);
  expect(await keysOf(first.agency_id)).toEqual([{ id: first.key_id, revoked_at: null }]);
  expect(await webhooks()).toEqual([{ id: first.webhook_id, url: RECEIVER, disabled_at: null }]);
  expect(await authenticates(first.key, first.agency_id)).toBe(true);
  expect((await findSession(t.db, SESSION))?.userId).toBe(first.owner_user_id);
  expect(await passwordSets()).toHaveLength(1);
  const target = await findDeliveryTarget(t.db, first.webhook_id);
  expect(target?.secrets).toEqual([first.webhook_secret]);
});

test('what no longer works is made anew, and only that', async () => {
  const first = await prepare();
  // The owner revoked the demo key on the page; the receiver moved to another port.
  await cli(['key', 'revoke', first.key_id], env);
  const second = await prepare('https://localhost:4100/webhooks');
  expect(second.made).toEqual({ agency: false, key: true, webhook: false, password: false });
  expect(second.key).not.toBe(first.key);
  expect(await authenticates(second.key, first.agency_id)).toBe(true);
  expect(await webhooks()).toEqual([
    { id: first.webhook_id, url: 'https://localhost:4100/webhooks', disabled_at: null },
  ]);

  // Switched off on the page, then its secret rotated with no overlap: the kept secret signs no
  // more, so a new webhook, and the old one stays off.
  await cli(['webhook', 'disable', first.webhook_id], env);
  const afterOff = await prepare('https://localhost:4100/webhooks');
  expect(afterOff.made.webhook).toBe(false);
  expect((await findDeliveryTarget(t.db, first.webhook_id))?.disabled_at).toBeNull();
  await cli(['webhook', 'rotate-secret', first.webhook_id, '--overlap', '0s'], env);
  const third = await prepare('https://localhost:4100/webhooks');
  expect(third.made).toEqual({ agency: false, key: false, webhook: true, password: false });
  const states = new Map((await webhooks()).map((w) => [w.id, w.disabled_at === null]));
  expect(states).toEqual(
    new Map([
      [first.webhook_id, false],
      [third.webhook_id, true],
    ]),
  );

  // Another password (DEMO_OWNER_PASSWORD) is set, which signs the owner out, as any new one does.
  expect((await prepare('https://localhost:4100/webhooks', 'another-demo-password')).made.password).toBe(
    true,
  );
  const owner = await t.db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', first.owner_user_id)
    .executeTakeFirstOrThrow();
  expect(await verifyPassword('another-demo-password', owner.password_hash!)).toBe(true);
});

test('an agency whose API access was turned off is turned on again; other agencies are left alone', async () => {
  const first = await prepare();
  await cli(['agency', 'create', '--name', 'Real Golf Co'], env);
  await cli(
    ['agency', 'update', first.agency_id, '--api-enabled', 'false', '--subscription', 'expired'],
    env,
  );
  const again = await prepare();
  expect(again.agency_id).toBe(first.agency_id);
  expect(await authenticates(first.key, first.agency_id)).toBe(true);
  expect(await t.db.selectFrom('agencies').select('id').execute()).toHaveLength(2);
});

test('a run before the state was kept, a state file cut short, a key of no agency: made anew, revoking nothing', async () => {
  // A run before the state was kept: a demo agency and a webhook to the receiver, no state file.
  const seeded = await cliJson<{ agency_id: string }>(['demo', 'seed'], env);
  const earlier = await cliJson<{ id: string }>(
    ['webhook', 'create', '--agency', seeded.agency_id, '--url', RECEIVER, '--events', 'all'],
    env,
  );
  const fresh = await prepare();
  expect(fresh).toMatchObject({
    agency_id: seeded.agency_id,
    made: { agency: false, key: true, webhook: true },
  });
  expect((await findDeliveryTarget(t.db, earlier.id))?.disabled_at).not.toBeNull();

  writeFileSync(statePath, '{"key": 42');
  expect((await prepare()).made).toMatchObject({ key: true, webhook: true });
  writeFileSync(
    statePath,
    JSON.stringify({ key: 'tps_nothing', webhook_id: 'whk_nothing', webhook_secret: 'whsec_nothing' }),
  );
  expect((await prepare()).made).toMatchObject({ key: true, webhook: true });
  const live = (await keysOf(seeded.agency_id)).filter((k) => k.revoked_at === null);
  // The seed's key and one per run that had no working key: none revoked, which a client may use.
  expect(live).toHaveLength(4);
});

test('no password on stdin: a usage error, and nothing is made', async () => {
  const result = await cli(['demo', 'prepare', '--receiver-url', RECEIVER, '--state', statePath], env);
  expect(result).toMatchObject({ code: 2, stderr: 'error: no password given on stdin.\n' });
  expect(await demoAgencies()).toHaveLength(0);
});
