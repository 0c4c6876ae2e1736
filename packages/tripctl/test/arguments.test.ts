import { randomBytes } from 'node:crypto';
import { adminUrl } from '@trips/testkit';
import { cli, STACK_TRACE } from './helpers.ts';

// Nothing listens on port 1: a command that reached for the database here would fail with exit 1,
// so every exit 2 below also proves the arguments were refused before any connection was tried.
const unreachable = { DATABASE_URL: 'postgres://tripctl:hunter2@127.0.0.1:1/trips' };
const agency = 'agy_0000000000000000';

describe('a bad or missing argument exits 2 with a message naming it, before touching the database', () => {
  test.each([
    [
      'an unknown scope',
      ['key', 'create', '--agency', agency, '--scopes', 'trips:read,trips:write'],
      /unknown scope 'trips:write'.*known scopes: trips:read, payments:read, contacts:read, events:read/,
    ],
    [
      'several unknown scopes',
      ['key', 'create', '--agency', agency, '--scopes', 'admin,events:read,billing'],
      /unknown scopes 'admin', 'billing'/,
    ],
    [
      'an empty scope list',
      ['key', 'create', '--agency', agency, '--scopes', ' , '],
      /--scopes.*at least one scope of/,
    ],
    ['a missing --scopes', ['key', 'create', '--agency', agency], /required option '--scopes <list>'/],
    ['an empty user', ['user', 'set-password', ' '], /' ' is neither an e-mail address nor a user id/],
    [
      'a day that does not exist in --since',
      ['webhook', 'redeliver', '--id', 'whk_0000000000000000', '--since', '2026-02-31T10:00:00Z'],
      /'2026-02-31T10:00:00Z' is not an ISO 8601 time/,
    ],
    [
      'an hour that does not exist in --since',
      ['webhook', 'redeliver', '--id', 'whk_0000000000000000', '--since', '2026-02-01T24:30:00Z'],
      /is not an ISO 8601 time/,
    ],
    [
      'a bad role',
      ['user', 'create', '--agency', agency, '--email', 'a@b.example', '--role', 'admin'],
      /'admin' is invalid.*owner, planner/,
    ],
    [
      'a missing role',
      ['user', 'create', '--agency', agency, '--email', 'a@b.example'],
      /required option '--role <role>'/,
    ],
    [
      'a missing --agency',
      ['user', 'create', '--email', 'a@b.example', '--role', 'owner'],
      /required option '--agency <id>'/,
    ],
    [
      'a missing --agency for a key',
      ['key', 'create', '--scopes', 'trips:read'],
      /required option '--agency <id>'/,
    ],
    [
      'a bad e-mail',
      ['user', 'create', '--agency', agency, '--email', 'mary at fairway', '--role', 'owner'],
      /'mary at fairway' is not an e-mail address/,
    ],
    [
      'a bad subscription on create',
      ['agency', 'create', '--name', 'X', '--subscription', 'paused'],
      /'paused' is invalid.*trialing, active, expired/,
    ],
    [
      'a bad subscription on update',
      ['agency', 'update', agency, '--subscription', 'lapsed'],
      /'lapsed' is invalid/,
    ],
    [
      'a bad --api-enabled value',
      ['agency', 'update', agency, '--api-enabled', 'yes'],
      /'yes' is not true or false/,
    ],
    ['a missing --name', ['agency', 'create'], /required option '--name <name>'/],
    ['an empty --name', ['agency', 'create', '--name', '  '], /1 to 200 characters/],
    [
      'an id of the wrong type',
      ['agency', 'update', 'trp_0000000000000000', '--name', 'X'],
      /'trp_0000000000000000' is not an agency id/,
    ],
    ['a missing key id', ['key', 'revoke'], /Give its id: tripctl key revoke <id> \(or --id <id>\)/],
    [
      'an --agency of the wrong type',
      ['key', 'create', '--agency', 'key_abc', '--scopes', 'trips:read'],
      /'key_abc' is not an agency id/,
    ],
    ['nothing to change', ['agency', 'update', agency], /nothing to change/],
    [
      'a non-http --base-url',
      ['demo', 'seed', '--base-url', 'ftp://files.example'],
      /not an http or https URL/,
    ],
    ['an unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
    ['an unknown subcommand', ['key', 'rotate'], /unknown command 'rotate'/],
    ['help for an unknown command', ['help', 'frobnicate'], /^error: unknown command 'frobnicate'/],
    ['help for an unknown subcommand', ['help', 'key', 'rotate'], /^error: unknown command 'rotate'/],
    [
      "a group's help for an unknown subcommand",
      ['key', 'help', 'rotate'],
      /^error: unknown command 'rotate'/,
    ],
    ['an unknown option', ['migrate', '--force'], /unknown option '--force'/],
    ['an extra argument', ['key', 'revoke', 'key_abc', 'key_def'], /too many arguments/],
  ])('%s', async (_what, argv, message) => {
    const result = await cli(argv, unreachable);
    expect(result.stderr).toMatch(message);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  test('no command at all shows the usage on stderr', async () => {
    const result = await cli([], unreachable);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/Usage: tripctl/);
  });
});

test('--help succeeds and lists every command group', async () => {
  const result = await cli(['--help'], unreachable);
  expect(result.code).toBe(0);
  for (const command of ['migrate', 'agency', 'user', 'key', 'demo']) expect(result.stdout).toMatch(command);
});

test.each([
  [['--help'], /^Usage: tripctl \[options\] \[command\]/],
  [['help'], /^Usage: tripctl \[options\] \[command\]/],
  [['help', 'key'], /^Usage: tripctl key \[options\] \[command\]/],
  [['help', 'key', 'create'], /^Usage: tripctl key create \[options\]/],
  [['key', 'help', 'create'], /^Usage: tripctl key create \[options\]/],
  [['key', 'create', '--help'], /^Usage: tripctl key create \[options\]/],
])('tripctl %j shows the help asked for on stdout and succeeds', async (argv, usage) => {
  const result = await cli(argv, unreachable);
  expect(result).toMatchObject({ code: 0, stderr: '' });
  expect(result.stdout).toMatch(usage);
});

test('a command group without a command shows its usage on stderr as an error', async () => {
  const result = await cli(['key'], unreachable);
  expect(result).toMatchObject({ code: 2, stdout: '' });
  expect(result.stderr).toMatch(/^Usage: tripctl key \[options\] \[command\]/);
});

test('--json is accepted by every command', async () => {
  for (const argv of [
    ['migrate'],
    ['agency', 'create'],
    ['agency', 'update'],
    ['user', 'create'],
    ['key', 'create'],
    ['key', 'revoke'],
    ['demo', 'seed'],
  ]) {
    const help = await cli([...argv, '--help'], unreachable);
    expect({ argv, code: help.code, json: /--json/.test(help.stdout) }).toEqual({
      argv,
      code: 0,
      json: true,
    });
  }
});

describe('configuration and database failures', () => {
  test('a DATABASE_URL that is not a URL is a configuration error (exit 2) naming the variable', async () => {
    const result = await cli(['migrate'], { DATABASE_URL: 'trips on localhost' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/DATABASE_URL is not a URL/);
  });

  test('a bad PORT for the demo curl line is a configuration error naming it', async () => {
    const result = await cli(['demo', 'seed'], { ...unreachable, PORT: 'eighty' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/PORT must be a whole number/);
  });

  test('an unreachable database is an operational failure that names the host but not the password', async () => {
    const result = await cli(['agency', 'create', '--name', 'X'], unreachable);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cannot reach Postgres at 127\.0\.0\.1:1\/trips/);
    expect(result.stderr).not.toMatch(/hunter2/);
    expect(result.stderr).not.toMatch(STACK_TRACE);
  });

  test('a database that does not exist says so and what to do', async () => {
    const url = new URL(adminUrl);
    url.pathname = `/tripctl_missing_${randomBytes(4).toString('hex')}`;
    const result = await cli(['migrate'], { DATABASE_URL: url.toString() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/does not exist/);
  });
});
