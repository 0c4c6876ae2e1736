import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, repoRoot, spawnCli } from './helpers.ts';

// tripctl as a new platform engineer meets it (issue 26, item 8): which database it talks to, one
// way to give ids, --api-enabled, agency list, --version, and key revoke by the prefix the
// settings page shows.

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

// Nothing listens on port 1: an exit 2 with this URL was decided before any connection was tried.
const unreachable = { DATABASE_URL: 'postgres://tripctl@127.0.0.1:1/trips' };

async function newAgency(...extra: string[]): Promise<string> {
  return (await cliJson<{ id: string }>(['agency', 'create', '--name', 'Fairway Tours', ...extra], env)).id;
}

const apiEnabled = async (id: string) =>
  (await t.db.selectFrom('agencies').select('api_enabled').where('id', '=', id).executeTakeFirstOrThrow())
    .api_enabled;

describe('which database', () => {
  test('without DATABASE_URL, tripctl says it is not set (exit 2), not that credentials were refused', async () => {
    for (const argv of [
      ['agency', 'list'],
      ['migrate'],
      ['key', 'list', '--agency', 'agy_0000000000000000'],
    ]) {
      const result = await cli(argv, {});
      expect({ argv, code: result.code }).toEqual({ argv, code: 2 });
      expect(result.stderr).toMatch(/DATABASE_URL is not set/);
      expect(result.stderr).not.toMatch(/refused|credentials|role/);
    }
  });

  test('the real process says the same, and an empty DATABASE_URL is not set either', async () => {
    const result = await spawnCli(['agency', 'list'], { DATABASE_URL: '' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: Invalid configuration:\n {2}- DATABASE_URL is not set/);
  });

  test('`pnpm tripctl` with no DATABASE_URL talks to the database scripts/start.sh uses', async () => {
    const { DATABASE_URL: _unset, ...withoutUrl } = process.env;
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'pnpm',
        ['--silent', 'run', 'tripctl', 'agency', 'list', '--json'],
        { cwd: repoRoot, env: withoutUrl, timeout: 60_000 },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });
    expect(result.stderr).not.toMatch(/not set/);
    // Whether or not the demo has run on this machine: the list, or word of that very database.
    if (result.code === 0) expect(JSON.parse(result.stdout)).toHaveProperty('agencies');
    else expect(result.stderr).toMatch(/127\.0\.0\.1:5432\/trips\b/);
    const startSh = readFileSync(`${repoRoot}/scripts/start.sh`, 'utf8');
    expect(startSh).toMatch(/^\. scripts\/local-env\.sh$/m);
  });
});

describe('--version and agency list', () => {
  test('--version and -V print the version in package.json', async () => {
    const { version } = JSON.parse(readFileSync(`${repoRoot}/packages/tripctl/package.json`, 'utf8'));
    for (const flag of ['--version', '-V']) {
      expect(await cli([flag], {})).toEqual({ code: 0, stdout: `tripctl ${version}\n`, stderr: '' });
    }
  });

  test('agency list shows every agency, newest first, as lines or JSON', async () => {
    const first = await newAgency();
    const second = await newAgency('--api-enabled');
    const { agencies } = await cliJson<{ agencies: { id: string; api_enabled: boolean }[] }>(
      ['agency', 'list'],
      env,
    );
    const ids = agencies.map((a) => a.id);
    expect(ids.indexOf(second)).toBeLessThan(ids.indexOf(first));
    expect(ids.indexOf(first)).toBeGreaterThanOrEqual(0);
    expect(agencies.find((a) => a.id === second)).toMatchObject({ api_enabled: true });
    const human = await cli(['agency', 'list'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^${second}  API on   trialing  "Fairway Tours"$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^${first}  API off  trialing  "Fairway Tours"$`, 'm'));
  });
});

describe('--api-enabled is written the same in agency create and agency update', () => {
  test.each([
    [[], false],
    [['--api-enabled'], true],
    [['--api-enabled', 'true'], true],
    [['--api-enabled', 'false'], false],
  ])('agency create %j: API access %s', async (flags, expected) => {
    expect(await apiEnabled(await newAgency(...flags))).toBe(expected);
  });

  test('agency update takes the same three forms', async () => {
    const id = await newAgency();
    await cliJson(['agency', 'update', id, '--api-enabled'], env);
    expect(await apiEnabled(id)).toBe(true);
    await cliJson(['agency', 'update', id, '--api-enabled', 'false'], env);
    expect(await apiEnabled(id)).toBe(false);
    await cliJson(['agency', 'update', id, '--api-enabled', 'true'], env);
    expect(await apiEnabled(id)).toBe(true);
  });

  test('a value that is not true or false is refused in both (exit 2)', async () => {
    for (const argv of [
      ['agency', 'create', '--name', 'X', '--api-enabled', 'yes'],
      ['agency', 'update', 'agy_0000000000000000', '--api-enabled', 'yes'],
    ]) {
      const result = await cli(argv, unreachable);
      expect({ argv, code: result.code }).toEqual({ argv, code: 2 });
      expect(result.stderr).toMatch(/'yes' is not true or false/);
    }
  });
});

/** Every command of every group, from tripctl's own help. */
async function allCommands(): Promise<string[][]> {
  const namesIn = (help: string) =>
    [...help.split(/^Commands:$/m)[1]!.matchAll(/^ {2}([a-z-]+)/gm)]
      .map((m) => m[1]!)
      .filter((n) => n !== 'help');
  const groups = namesIn((await cli(['--help'], {})).stdout);
  const commands: string[][] = [];
  for (const group of groups) {
    const help = (await cli([group, '--help'], {})).stdout;
    if (!/^Commands:$/m.test(help)) commands.push([group]);
    else for (const name of namesIn(help)) commands.push([group, name]);
  }
  return commands;
}

describe('one way to give ids: the first argument, or --id, in every command that acts on one object', () => {
  test('every command that takes an id takes both forms, and none takes it another way', async () => {
    const commands = await allCommands();
    expect(commands.length).toBeGreaterThan(15);
    const takingIds: string[] = [];
    for (const argv of commands) {
      const help = (await cli([...argv, '--help'], {})).stdout;
      const usage = help.split('\n')[0]!;
      const positional = /^Arguments:\n {2}id /m.test(help);
      const option = /^ {2}--id <id> /m.test(help);
      expect({ argv, positional, option }).toEqual({ argv, positional: option, option });
      // No command names its own object with an option of another name.
      expect({ argv, usage }).not.toEqual({
        argv,
        usage: expect.stringMatching(/--(user|webhook|key) /),
      });
      if (positional) takingIds.push(argv.join(' '));
    }
    expect(takingIds.sort()).toEqual([
      'agency update',
      'key revoke',
      'key scopes',
      'user set-password',
      'webhook attempt',
      'webhook attempts',
      'webhook disable',
      'webhook enable',
      'webhook redeliver',
      'webhook resend',
      'webhook rotate-secret',
      'webhook test',
      'webhook update',
    ]);
  });

  test.each([
    [['agency', 'update'], 'agy', ['--name', 'X']],
    [['key', 'revoke'], 'key', []],
    [['key', 'scopes'], 'key', ['--add', 'trips:read']],
    [['webhook', 'disable'], 'whk', []],
    [['webhook', 'attempts'], 'whk', []],
    [['webhook', 'attempt'], 'whk', ['--attempt', '1']],
    [['webhook', 'resend'], 'whk', ['--event', 'evt_0']],
    [['webhook', 'rotate-secret'], 'whk', []],
    [['webhook', 'redeliver'], 'whk', ['--since', '1h']],
  ])('%j: no id, or two different ids, is a usage error (exit 2)', async (argv, prefix, rest) => {
    const none = await cli([...argv, ...rest], unreachable);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(new RegExp(`Give its id: tripctl ${argv.join(' ')} <id> \\(or --id <id>\\)`));
    const a = `${prefix}_0000000000000000`;
    const b = `${prefix}_1111111111111111`;
    const two = await cli([...argv, a, '--id', b, ...rest], unreachable);
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(new RegExp(`two ids, ${a} and --id ${b}`));
    // The same id twice is one id: it goes on to the database, unreachable here (exit 1).
    expect((await cli([...argv, a, '--id', a, ...rest], unreachable)).code).toBe(1);
  });

  test('the same command works with either form', async () => {
    const agency = await newAgency();
    await cliJson(['agency', 'update', agency, '--name', 'By argument'], env);
    await cliJson(['agency', 'update', '--id', agency, '--subscription', 'active'], env);
    expect(
      await t.db.selectFrom('agencies').selectAll().where('id', '=', agency).executeTakeFirstOrThrow(),
    ).toMatchObject({
      name: 'By argument',
      subscription_status: 'active',
    });
    const key = await cliJson<{ id: string }>(
      ['key', 'create', '--agency', agency, '--scopes', 'trips:read'],
      env,
    );
    expect(await cliJson(['key', 'scopes', key.id, '--add', 'events:read'], env)).toMatchObject({
      scopes: ['trips:read', 'events:read'],
    });
    expect(await cliJson(['key', 'scopes', '--id', key.id, '--remove', 'trips:read'], env)).toMatchObject({
      scopes: ['events:read'],
    });
    const webhook = await cliJson<{ id: string }>(
      ['webhook', 'create', '--agency', agency, '--url', 'https://example.com/hooks', '--events', 'all'],
      env,
    );
    expect(await cliJson(['webhook', 'disable', webhook.id], env)).toMatchObject({ state: 'disabled' });
    expect(await cliJson(['webhook', 'enable', '--id', webhook.id], env)).toMatchObject({ state: 'active' });
    expect(await cliJson(['webhook', 'attempts', webhook.id], env)).toMatchObject({ webhook_id: webhook.id });
  });
});

describe('key revoke by the prefix the settings page shows', () => {
  let agency: string;
  let keys: { id: string; key: string }[];
  beforeAll(async () => {
    agency = await newAgency('--api-enabled');
    keys = [];
    for (const name of ['one', 'two']) {
      keys.push(
        await cliJson(['key', 'create', '--agency', agency, '--scopes', 'trips:read', '--name', name], env),
      );
    }
  });
  const revokedAt = async (id: string) =>
    (await t.db.selectFrom('api_keys').select('revoked_at').where('id', '=', id).executeTakeFirstOrThrow())
      .revoked_at;

  test('the prefix as shown, with or without its …, revokes that key and no other', async () => {
    const [one, two] = keys as [{ id: string; key: string }, { id: string; key: string }];
    const shown = `${one.key.slice(0, 12)}…`;
    expect((await cli(['key', 'list', '--agency', agency], env)).stdout).toContain(shown);
    const result = await cliJson(['key', 'revoke', shown, '--agency', agency], env);
    expect(result).toMatchObject({ id: one.id, revoked: true, already_revoked: false });
    expect(await revokedAt(one.id)).not.toBeNull();
    expect(await revokedAt(two.id)).toBeNull();
    expect(
      await cliJson(['key', 'revoke', '--id', one.key.slice(0, 12), '--agency', agency], env),
    ).toMatchObject({
      id: one.id,
      already_revoked: true,
    });
  });

  test('a prefix without --agency is a usage error; in another agency it names no key', async () => {
    const prefix = keys[1]!.key.slice(0, 12);
    const bare = await cli(['key', 'revoke', prefix], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/a prefix names a key within its agency: add --agency/);
    const other = await newAgency();
    const elsewhere = await cli(['key', 'revoke', prefix, '--agency', other], env);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toBe(`error: agency ${other} has no key with the prefix ${prefix}.\n`);
    expect(await revokedAt(keys[1]!.id)).toBeNull();
  });

  test('a prefix two keys of the agency share revokes neither and lists both ids', async () => {
    const [one, two] = keys as [{ id: string }, { id: string; key: string }];
    const prefix = two.key.slice(0, 12);
    await t.db.updateTable('api_keys').set({ prefix }).where('id', '=', one.id).execute();
    const result = await cli(['key', 'revoke', prefix, '--agency', agency], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(`2 keys of agency ${agency} have the prefix ${prefix}: give the id of one`),
    );
    expect(result.stderr).toContain(one.id);
    expect(result.stderr).toContain(two.id);
    expect(await revokedAt(two.id)).toBeNull();
  });

  test('something that is neither an id nor a whole prefix is refused before the database', async () => {
    for (const ref of ['tps_abc', 'tps_abcdefghij', 'abc']) {
      const result = await cli(['key', 'revoke', ref, '--agency', agency], unreachable);
      expect({ ref, code: result.code }).toEqual({ ref, code: 2 });
    }
  });
});
