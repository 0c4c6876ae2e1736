import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { mainTs, repoRoot, spawnCli, STACK_TRACE } from './helpers.ts';

// The real process, as operators run it: exit codes reach the shell, and the process ends as soon
// as the work is done. pg's pool keeps idle connections for 10 s, so a pool left open would hold
// the process past its last output by more than the 5 s asserted below.
let t: TestDatabase;
let agencyId: string;
beforeAll(async () => {
  t = await createTestDatabase();
  ({ id: agencyId } = await t.db
    .insertInto('agencies')
    .values({ name: 'Spawned Golf', api_enabled: true, subscription_status: 'active' })
    .returning('id')
    .executeTakeFirstOrThrow());
});
afterAll(() => t.drop());

test('key create --json: exit 0, one JSON document on stdout, the key stored as its hash, prompt exit', async () => {
  const result = await spawnCli(
    ['key', 'create', '--agency', agencyId, '--scopes', 'trips:read,events:read', '--json'],
    { DATABASE_URL: t.url },
  );
  expect({ code: result.code, signal: result.signal, stderr: result.stderr }).toEqual({
    code: 0,
    signal: null,
    stderr: '',
  });
  expect(result.lingeredMs).toBeLessThan(5_000);
  const out = JSON.parse(result.stdout) as { id: string; key: string };
  const row = await t.db
    .selectFrom('api_keys')
    .select(['id', 'scopes'])
    .where('hash', '=', createHash('sha256').update(out.key).digest())
    .executeTakeFirstOrThrow();
  expect(row).toEqual({ id: out.id, scopes: ['trips:read', 'events:read'] });
});

test('agency update of a missing agency: exit 1 with a message, promptly', async () => {
  const result = await spawnCli(['agency', 'update', 'agy_0000000000000000', '--api-enabled', 'false'], {
    DATABASE_URL: t.url,
  });
  expect({ code: result.code, signal: result.signal, stdout: result.stdout }).toEqual({
    code: 1,
    signal: null,
    stdout: '',
  });
  expect(result.stderr).toBe('error: no agency agy_0000000000000000.\n');
  expect(result.lingeredMs).toBeLessThan(5_000);
});

test('an unknown scope: exit 2 naming it, no stack trace', async () => {
  const result = await spawnCli(['key', 'create', '--agency', agencyId, '--scopes', 'trips:write'], {
    DATABASE_URL: t.url,
  });
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(/unknown scope 'trips:write'/);
  expect(result.stderr).not.toMatch(STACK_TRACE);
});

test('an unknown command: exit 2', async () => {
  const result = await spawnCli(['teleport'], { DATABASE_URL: t.url });
  expect(result.code).toBe(2);
  expect(result.stderr).toMatch(/unknown command 'teleport'/);
});

test('an unreachable database: exit 1, a message and no stack trace', async () => {
  const result = await spawnCli(['migrate'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/trips' });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/^error: cannot reach Postgres at 127\.0\.0\.1:1\/trips/);
  expect(result.stderr).not.toMatch(STACK_TRACE);
});

test('a reader that closes the pipe early (| true) ends tripctl quietly: no EPIPE stack trace', async () => {
  const child = spawn(
    process.execPath,
    [mainTs, 'key', 'create', '--agency', agencyId, '--scopes', 'trips:read', '--json'],
    {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: t.url },
    },
  );
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise((resolve) => child.on('close', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
});
