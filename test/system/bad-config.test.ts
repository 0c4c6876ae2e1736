import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Each service started the way its image starts it (node src/main.ts) with one bad setting: one
// fatal JSON line on stdout naming the variable, exit code 1, and nothing on stderr (no stack
// trace), before any connection is tried.
const main = (service: string) =>
  fileURLToPath(new URL(`../../services/${service}/src/main.ts`, import.meta.url));

function start(service: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [main(service)], {
    // Nothing it could reach: a service that got past its configuration would fail differently.
    env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
}

test.each([
  [
    'api',
    { LOG_LEVEL: 'loud' },
    /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got 'loud'\)/,
  ],
  ['api', { API_TRUST_PROXY: 'the ingress' }, /API_TRUST_PROXY must be .* \(got 'the ingress'\)/],
  ['recorder', { LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
  ['recorder', { EVENT_GROUP_QUIET: 'soon' }, /EVENT_GROUP_QUIET/],
  ['dispatcher', { WEBHOOK_TIMEOUT: 'ten seconds' }, /WEBHOOK_TIMEOUT/],
  [
    'dispatcher',
    { AMQP_URL: 'amqp://trips:s3cret@rabbit-0:5672,,amqp://trips:s3cret@rabbit-2:5672' },
    /AMQP_URL's URL 2 of 3 is empty: separate the nodes' URLs with single commas/,
  ],
  ['api', { AMQP_URL: 'amqp://rabbit-0,http://rabbit-1' }, /AMQP_URL's URL 2 of 2 must use amqp: or amqps:/],
])('%s with %j stops at once, naming the variable, with no stack trace', async (service, env, message) => {
  const { code, stdout, stderr } = await start(service, env);
  expect(code).toBe(1);
  expect(stderr).toBe('');
  const lines = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 60, name: service });
  expect(lines[0].msg).toMatch(/^Invalid configuration:/);
  expect(lines[0].msg).toMatch(message);
  expect(stdout).not.toContain('s3cret');
});

test('a start that fails is one fatal line saying so, exit code 1, nothing on stderr', async () => {
  // The recorder opens Postgres at start, and here there is none.
  const { code, stdout, stderr } = await start('recorder', { AMQP_URL: 'amqp://nobody@127.0.0.1:1' });
  expect(code).toBe(1);
  expect(stderr).toBe('');
  const fatal = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .filter((line) => line.level === 60);
  expect(fatal).toEqual([expect.objectContaining({ msg: 'recorder failed to start' })]);
});
