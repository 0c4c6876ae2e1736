import { spawn } from 'node:child_process';
import { createLogger } from '../src/logger.ts';

function capture() {
  const lines: string[] = [];
  const logger = createLogger('test', 'info', { write: (line: string) => void lines.push(line) });
  return { logger, text: () => lines.join('') };
}

test('credentials are redacted even when a whole object is logged by mistake', () => {
  const { logger, text } = capture();
  const key = `tps_${'K'.repeat(40)}`;
  logger.info(
    {
      req: { headers: { authorization: `Bearer ${key}`, cookie: 'session=abc123secret' } },
      key,
      webhook: { secret: 'whsec_verysecret' },
      user: { password: 'hunter2hunter2' },
      databaseUrl: 'postgres://app:dbpassword@db/trips',
    },
    'oops',
  );
  const out = text();
  expect(out).toContain('oops');
  for (const secret of [key, 'abc123secret', 'whsec_verysecret', 'hunter2hunter2', 'dbpassword']) {
    expect(out).not.toContain(secret);
  }
  expect(out).toContain('[redacted]');
});

test("a whole service's config logged by mistake keeps its connection URLs to itself", () => {
  const { logger, text } = capture();
  logger.info(
    {
      config: {
        databaseUrl: 'postgres://app:dbpass1@db/trips',
        amqpUrls: ['amqp://app:mqpass2@mq1', 'amqp://app:mqpass3@mq2'],
        rateLimit: { redisUrl: 'redis://:redispass4@cache:6379' },
        smtpUrl: 'smtps://mail:smtppass5@mail.example',
      },
      settings: { amqpUrls: ['amqp://app:mqpass6@mq1'] },
    },
    'config',
  );
  const out = text();
  for (const secret of ['dbpass1', 'mqpass2', 'mqpass3', 'redispass4', 'smtppass5', 'mqpass6']) {
    expect(out).not.toContain(secret);
  }
});

/** Runs `body` in a child Node process with a default logger `log`; answers stdout as it arrives. */
function childLogging(body: string) {
  const logger = new URL('../src/logger.ts', import.meta.url).pathname;
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { createLogger } from '${logger}';\nconst log = createLogger('child', 'info');\n${body}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { lines: () => out.split('\n').filter(Boolean), exited, child };
}

test('the default log is written in blocks, yet every line is out by the time the process exits', async () => {
  // Lines buffered when process.exit is called would be lost without the flush on exit.
  const run = childLogging(`for (let i = 0; i < 1000; i++) log.info({ i }, 'line'); process.exit(3);`);
  expect(await run.exited).toBe(3);
  const lines = run.lines();
  expect(lines).toHaveLength(1000);
  expect(JSON.parse(lines.at(-1)!).i).toBe(999);
});

test("a quiet service's line reaches the log within a fraction of a second, not when the buffer fills", async () => {
  const run = childLogging(`log.info('started'); setTimeout(() => {}, 10_000);`);
  try {
    const deadline = Date.now() + 2_000;
    while (run.lines().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(run.lines().map((l) => JSON.parse(l).msg)).toEqual(['started']);
  } finally {
    run.child.kill();
  }
});
