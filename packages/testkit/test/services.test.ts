// The one decision of where a test run's PostgreSQL, RabbitMQ and Redis come from (src/services/),
// run as test.sh runs it. This machine has its services and no container runtime, so what is
// exercised here is the local way and both failures; starting containers is not (docs/design/test-services.md).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const run = fileURLToPath(new URL('../src/services/run.ts', import.meta.url));
const local = {
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  AMQP_URL: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
};
const waysOut =
  /Either start PostgreSQL, RabbitMQ and Redis .*, or start Docker, and the tests run them in containers/;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  seconds: number;
}

function runCommand(command: string, args: string[], env: Record<string, string>): Promise<Ran> {
  const started = Date.now();
  const base = { ...process.env, TEST_SERVICES: '', TEST_RUNTIME_TIMEOUT: '' };
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: repoRoot, env: { ...base, ...env }, timeout: 90_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr, seconds: (Date.now() - started) / 1000 });
      },
    );
  });
}

/** The decision, then a command that prints the URLs it was given. */
const decide = (env: Record<string, string>) =>
  runCommand(
    process.execPath,
    [
      run,
      process.execPath,
      '-p',
      'process.env.DATABASE_URL + " " + process.env.AMQP_URL + " " + process.env.REDIS_URL',
    ],
    env,
  );

let dir: string;
let closedPorts: { DATABASE_URL: string; AMQP_URL: string; REDIS_URL: string };
// A "runtime" that takes the connection and never answers, and counts who asked.
let silentRuntime: Server;
let asked = 0;
const askers = new Set<Socket>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'test-services-'));
  const closed = await Promise.all([0, 1, 2].map(closedPort));
  closedPorts = {
    DATABASE_URL: `postgres://postgres@127.0.0.1:${closed[0]}/postgres`,
    AMQP_URL: `amqp://guest:guest@127.0.0.1:${closed[1]}`,
    REDIS_URL: `redis://127.0.0.1:${closed[2]}`,
  };
  silentRuntime = createServer((socket) => {
    asked++;
    askers.add(socket);
  });
  await new Promise<void>((resolve) => silentRuntime.listen(join(dir, 'silent.sock'), resolve));
});
afterAll(async () => {
  for (const socket of askers) socket.destroy();
  await new Promise((resolve) => silentRuntime.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => (asked = 0));

/** A loopback port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const silentDocker = () => `unix://${join(dir, 'silent.sock')}`;
const closedDocker = () => `unix://${join(dir, 'nothing-here.sock')}`;

test("this machine's services answer: the command runs with their URLs, and no runtime is asked", async () => {
  // A runtime asked would hold the run for the whole minute.
  const ran = await decide({ ...local, DOCKER_HOST: silentDocker(), TEST_RUNTIME_TIMEOUT: '60s' });
  expect(ran.code).toBe(0);
  expect(ran.stdout.trim()).toBe(`${local.DATABASE_URL} ${local.AMQP_URL} ${local.REDIS_URL}`);
  expect(ran.stderr).toMatch(/test services: this machine's: PostgreSQL 127\.0\.0\.1:\d+, RabbitMQ/);
  expect(asked).toBe(0);
  expect(ran.seconds).toBeLessThan(20);
});

test('nothing answers and no runtime does: one message with both ways out, exit 1, the command never run', async () => {
  const ran = await decide({ ...closedPorts, DOCKER_HOST: closedDocker() });
  expect(ran.code).toBe(1);
  expect(ran.stdout).toBe('');
  const [found, ways, ...rest] = ran.stderr.trim().split('\n');
  expect(found).toMatch(
    /^test services: PostgreSQL at 127\.0\.0\.1:\d+, RabbitMQ at .* and Redis at .* do not answer, and no container runtime answers \(DOCKER_HOST=unix:.*nothing-here\.sock: /,
  );
  expect(ways).toMatch(waysOut);
  expect(rest).toEqual([]);
  expect(ran.stderr).not.toMatch(/guest:guest|\n\s+at /); // no credentials, no stack trace
  expect(ran.seconds).toBeLessThan(20);
});

test('TEST_SERVICES=containers without a runtime: the same message, not a hang', async () => {
  const closed = await decide({ ...local, TEST_SERVICES: 'containers', DOCKER_HOST: closedDocker() });
  expect(closed.code).toBe(1);
  expect(closed.stderr).toMatch(
    /^test services: TEST_SERVICES=containers, and no container runtime answers \(/,
  );
  expect(closed.stderr).toMatch(waysOut);

  // A runtime that never answers is given TEST_RUNTIME_TIMEOUT, then the message.
  const silent = await decide({
    ...local,
    TEST_SERVICES: 'containers',
    DOCKER_HOST: silentDocker(),
    TEST_RUNTIME_TIMEOUT: '2s',
  });
  expect(silent.code).toBe(1);
  expect(silent.stderr).toMatch(
    /no container runtime answers \(DOCKER_HOST=unix:.*silent\.sock: no answer within 2s\)/,
  );
  expect(silent.stderr).toMatch(waysOut);
  expect(asked).toBeGreaterThan(0);
  expect(silent.seconds).toBeLessThan(20);
});

test('TEST_SERVICES=local when they do not answer: the message, and no runtime asked', async () => {
  const ran = await decide({
    ...local,
    REDIS_URL: closedPorts.REDIS_URL,
    TEST_SERVICES: 'local',
    DOCKER_HOST: silentDocker(),
    TEST_RUNTIME_TIMEOUT: '60s',
  });
  expect(ran.code).toBe(1);
  expect(ran.stderr).toMatch(
    /^test services: TEST_SERVICES=local, and Redis at 127\.0\.0\.1:\d+ does not answer\.\n/,
  );
  expect(ran.stderr).toMatch(waysOut);
  expect(asked).toBe(0);
});

test('a bad setting is refused by name, without a stack trace', async () => {
  const refused = async (env: Record<string, string>, message: string) => {
    const ran = await decide({ ...local, ...env });
    expect(ran).toMatchObject({ code: 1, stdout: '' });
    expect(ran.stderr).toBe(`test services: ${message}\n`);
  };
  await refused({ TEST_SERVICES: 'docker' }, 'TEST_SERVICES is "docker"; it may be local or containers');
  await refused(
    { TEST_SERVICES: 'containers', TEST_RUNTIME_TIMEOUT: 'soon' },
    "TEST_RUNTIME_TIMEOUT: 'soon' is not a duration (use e.g. 500ms, 10s, 1m, 2h, 3d)",
  );
  await refused({ REDIS_URL: 'localhost' }, 'REDIS_URL is not a URL: "localhost"');
});

test("the README's test command: nothing reachable and no runtime, the message and exit 1 before jest starts", async () => {
  const ran = await runCommand(
    'bash',
    ['scripts/test.sh', 'packages/testkit/test/leak-check-environment.test.ts'],
    {
      TRIPS_PREPARED: '1',
      TEST_DATABASE_URL: closedPorts.DATABASE_URL,
      TEST_AMQP_URL: closedPorts.AMQP_URL,
      TEST_REDIS_URL: closedPorts.REDIS_URL,
      DOCKER_HOST: closedDocker(),
    },
  );
  expect(ran.code).toBe(1);
  expect(ran.stderr).toMatch(
    /^test services: PostgreSQL at .* do not answer, and no container runtime answers/m,
  );
  expect(ran.stderr).toMatch(waysOut);
  expect(ran.stdout + ran.stderr).not.toMatch(/Test Suites:|PASS|FAIL/);
});
