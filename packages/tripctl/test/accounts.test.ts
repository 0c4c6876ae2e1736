import { createHash } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson } from './helpers.ts';

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

const agencyRow = (id: string) =>
  t.db.selectFrom('agencies').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const keyRow = (id: string) =>
  t.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

async function newAgency(...extra: string[]): Promise<string> {
  return (await cliJson<{ id: string }>(['agency', 'create', '--name', 'Fairway Tours', ...extra], env)).id;
}

describe('agency create', () => {
  test('--json prints the stored agency; API access is off and the trial runs unless told', async () => {
    const out = await cliJson(['agency', 'create', '--name', 'Links & Lochs'], env);
    expect(out).toMatchObject({ id: expect.stringMatching(/^agy_/), name: 'Links & Lochs' });
    const row = await agencyRow(out.id as string);
    expect(row).toMatchObject({ name: 'Links & Lochs', api_enabled: false, subscription_status: 'trialing' });
    expect(out).toMatchObject({ api_enabled: false, subscription_status: 'trialing' });
  });

  test('--api-enabled and --subscription are stored', async () => {
    const id = await newAgency('--api-enabled', '--subscription', 'active');
    expect(await agencyRow(id)).toMatchObject({ api_enabled: true, subscription_status: 'active' });
  });

  test('without --json it prints one human line naming the new id', async () => {
    const result = await cli(['agency', 'create', '--name', 'Tee Time Travel'], env);
    expect(result.code).toBe(0);
    const id = /agy_[0-9A-Za-z]+/.exec(result.stdout)?.[0];
    expect(id).toBeDefined();
    expect((await agencyRow(id!)).name).toBe('Tee Time Travel');
    expect(() => JSON.parse(result.stdout)).toThrow();
  });
});

describe('agency update', () => {
  test('changes API access and subscription, and prints the agency as stored', async () => {
    const id = await newAgency();
    const out = await cliJson(
      ['agency', 'update', id, '--api-enabled', 'true', '--subscription', 'expired'],
      env,
    );
    expect(out).toMatchObject({ id, api_enabled: true, subscription_status: 'expired' });
    expect(await agencyRow(id)).toMatchObject({ api_enabled: true, subscription_status: 'expired' });

    await cliJson(['agency', 'update', id, '--api-enabled', 'false'], env);
    expect(await agencyRow(id)).toMatchObject({ api_enabled: false, subscription_status: 'expired' });
  });

  test('an unknown agency is an operational failure (exit 1), and nothing is printed on stdout', async () => {
    const result = await cli(['agency', 'update', 'agy_0000000000000000', '--subscription', 'active'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no agency agy_0000000000000000.\n' });
  });

  test('nothing to change is a usage error (exit 2)', async () => {
    const id = await newAgency();
    const result = await cli(['agency', 'update', id], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/nothing to change/);
  });
});

describe('user create', () => {
  test('--json prints the user, stored with its agency and role', async () => {
    const agencyId = await newAgency();
    const out = await cliJson(
      ['user', 'create', '--agency', agencyId, '--email', 'mary@fairway.example', '--role', 'planner'],
      env,
    );
    expect(out).toMatchObject({ id: expect.stringMatching(/^usr_/), agency_id: agencyId, role: 'planner' });
    const row = await t.db
      .selectFrom('users')
      .selectAll()
      .where('id', '=', out.id as string)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ agency_id: agencyId, email: 'mary@fairway.example', role: 'planner' });
  });

  test('an e-mail already taken (in any case) is an operational failure naming it', async () => {
    const agencyId = await newAgency();
    await cliJson(
      ['user', 'create', '--agency', agencyId, '--email', 'owner@taken.example', '--role', 'owner'],
      env,
    );
    const result = await cli(
      ['user', 'create', '--agency', agencyId, '--email', 'Owner@Taken.example', '--role', 'owner'],
      env,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/Owner@Taken\.example already exists/);
  });

  test('an unknown agency is an operational failure, not a foreign-key error', async () => {
    const result = await cli(
      ['user', 'create', '--agency', 'agy_0000000000000000', '--email', 'x@y.example', '--role', 'owner'],
      env,
    );
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no agency agy_0000000000000000.\n' });
  });
});

describe('key create', () => {
  test('prints the key once; only its SHA-256 and a prefix are stored', async () => {
    const agencyId = await newAgency('--api-enabled', '--subscription', 'active');
    const out = await cliJson<{
      id: string;
      key: string;
      prefix: string;
      scopes: string[];
      agency_id: string;
    }>(['key', 'create', '--agency', agencyId, '--scopes', 'trips:read,events:read', '--name', 'CI'], env);
    expect(out.id).toMatch(/^key_/);
    expect(out.agency_id).toBe(agencyId);
    expect(out.key).toMatch(/^tps_[0-9A-Za-z]{32,}$/);
    expect(out.scopes).toEqual(['trips:read', 'events:read']);

    const row = await keyRow(out.id);
    expect(row).toMatchObject({ agency_id: agencyId, name: 'CI', scopes: ['trips:read', 'events:read'] });
    expect(row.hash.equals(createHash('sha256').update(out.key).digest())).toBe(true);
    expect(out.key.startsWith(row.prefix)).toBe(true);
    expect(row.prefix.length).toBeLessThan(16);
    // No column holds the key in any encoding a careless writer might have used.
    for (const [column, value] of Object.entries(row)) {
      const forms =
        value instanceof Buffer
          ? [value.toString('utf8'), value.toString('hex'), value.toString('base64')]
          : [JSON.stringify(value) ?? ''];
      for (const form of forms)
        expect({ column, holdsKey: form.includes(out.key.slice(4)) }).toEqual({ column, holdsKey: false });
    }
  });

  test('the human output shows the key and tells the owner it is shown once', async () => {
    const agencyId = await newAgency('--api-enabled', '--subscription', 'active');
    const result = await cli(['key', 'create', '--agency', agencyId, '--scopes', 'payments:read'], env);
    expect(result.code).toBe(0);
    const key = /tps_[0-9A-Za-z]+/.exec(result.stdout)?.[0];
    expect(key).toBeDefined();
    expect(result.stdout).toMatch(/only time the key is shown/);
    const stored = await t.db
      .selectFrom('api_keys')
      .select(['agency_id', 'name', 'scopes'])
      .where('hash', '=', createHash('sha256').update(key!).digest())
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({ agency_id: agencyId, name: null, scopes: ['payments:read'] });
    expect(result.stderr).toBe('');
  });

  test('a key for an agency without API access is created, with a note on stderr', async () => {
    const agencyId = await newAgency();
    const result = await cli(
      ['key', 'create', '--agency', agencyId, '--scopes', 'trips:read', '--json'],
      env,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).id).toMatch(/^key_/);
    expect(result.stderr).toMatch(/api_not_enabled/);
  });

  test('an unknown agency is an operational failure', async () => {
    const result = await cli(
      ['key', 'create', '--agency', 'agy_0000000000000000', '--scopes', 'trips:read'],
      env,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no agency agy_0000000000000000/);
  });
});

describe('key revoke', () => {
  test('sets revoked_at; revoking again succeeds and keeps the first time', async () => {
    const agencyId = await newAgency();
    const { id } = await cliJson<{ id: string }>(
      ['key', 'create', '--agency', agencyId, '--scopes', 'trips:read'],
      env,
    );
    expect((await keyRow(id)).revoked_at).toBeNull();

    expect(await cliJson(['key', 'revoke', id], env)).toMatchObject({
      id,
      revoked: true,
      already_revoked: false,
    });
    const first = (await keyRow(id)).revoked_at;
    expect(first).toBeInstanceOf(Date);

    const again = await cli(['key', 'revoke', id], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(new RegExp(`Key ${id} was already revoked at `));
    expect((await keyRow(id)).revoked_at).toEqual(first);
  });

  test('only the named key is revoked', async () => {
    const agencyId = await newAgency();
    const a = await cliJson<{ id: string }>(
      ['key', 'create', '--agency', agencyId, '--scopes', 'trips:read'],
      env,
    );
    const b = await cliJson<{ id: string }>(
      ['key', 'create', '--agency', agencyId, '--scopes', 'trips:read'],
      env,
    );
    await cliJson(['key', 'revoke', a.id], env);
    expect((await keyRow(b.id)).revoked_at).toBeNull();
  });

  test('an unknown key is an operational failure', async () => {
    const result = await cli(['key', 'revoke', 'key_0000000000000000'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no key key_0000000000000000.\n' });
  });
});
