// scripts/promtool.sh, browser.sh, haproxy.sh and interpreters.sh where their tool is missing and
// cannot be installed (not root, as on a laptop): outside CI its tests skip, in one line saying which
// and how to have them; in CI the run fails. Run as an unprivileged user (nobody) when the test runs
// as root, with a PATH that has no promtool, haproxy or interpreter and a CHROMIUM_PATH that names no
// file (Debian machines have the default). And scripts/services.sh as a developer's own user, for
// whom rabbitmqctl cannot reach the broker, and `pnpm tripctl` and `pnpm trips` in a shell whose node
// is the machine's older one.
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const NOBODY = '65534';
let bin: string;

const which = (tool: string) =>
  execFileSync('bash', ['-c', `command -v ${tool} || true`], { encoding: 'utf8' }).trim();

beforeAll(() => {
  // What the scripts run, and apt-get so that the missing root alone is why they cannot install.
  bin = mkdtempSync(join(tmpdir(), 'trips-laptop-tools-'));
  chmodSync(bin, 0o755);
  for (const tool of ['bash', 'id', 'apt-get']) {
    const path = which(tool);
    if (path) symlinkSync(path, join(bin, tool));
  }
});

afterAll(() => rmSync(bin, { recursive: true, force: true }));

/** A script on standard input (readable whoever runs it), as nobody when we are root. */
function runScript(
  name: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = readFileSync(fileURLToPath(new URL(`../../scripts/${name}`, import.meta.url)), 'utf8');
  const asRoot = process.getuid?.() === 0;
  const [command, args] = asRoot
    ? [
        which('setpriv'),
        [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', join(bin, 'bash'), '-s'],
      ]
    : [join(bin, 'bash'), ['-s']];
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { cwd: bin, env: { PATH: bin, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
    child.stdin!.end(script);
  });
}

describe('promtool.sh', () => {
  const promtoolScript = (env: Record<string, string>) => runScript('promtool.sh', env);

  test('not CI: exit 3, on which test.sh skips the promtool tests, and one line saying which and how', async () => {
    expect(await promtoolScript({})).toEqual({
      code: 3,
      stdout: '',
      stderr:
        'promtool: promtool is missing, so test/monitoring/alerts.test.ts skips its promtool tests ' +
        "(check rules, test rules, the naive rules); to run them, install Debian's prometheus package " +
        '(apt-get install prometheus, as root) or set PROMTOOL to a promtool\n',
    });
  });

  test('CI: exit 1, never a skip', async () => {
    const ran = await promtoolScript({ CI: 'true' });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/^promtool: promtool is missing, and CI never skips the alert rules' tests: /);
  });

  test('a PROMTOOL that is missing is named in the line', async () => {
    const ran = await promtoolScript({ PROMTOOL: '/opt/prometheus/promtool' });
    expect(ran.code).toBe(3);
    expect(ran.stderr).toContain('promtool: /opt/prometheus/promtool is missing, so ');
  });
});

describe('haproxy.sh', () => {
  const haproxyScript = (env: Record<string, string>) => runScript('haproxy.sh', env);

  test('not CI: exit 3, on which test.sh skips the Postgres failover tests, and one line saying which and how', async () => {
    expect(await haproxyScript({})).toEqual({
      code: 3,
      stdout: '',
      stderr:
        'haproxy: haproxy is missing, so test/system/pg-failover*.serial.test.ts skip; to run them, ' +
        "install Debian's haproxy package (apt-get install haproxy, as root) or set HAPROXY to a haproxy\n",
    });
  });

  test('CI: exit 1, never a skip', async () => {
    const ran = await haproxyScript({ CI: 'true' });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(
      /^haproxy: haproxy is missing, and CI never skips the Postgres failover tests: /,
    );
  });
});

describe('browser.sh', () => {
  // In place of the default /usr/bin/chromium, which Debian machines have.
  const missing = () => join(bin, 'chromium');
  const browserScript = (env: Record<string, string>) =>
    runScript('browser.sh', { CHROMIUM_PATH: missing(), ...env });

  test('not CI: exit 3, on which test.sh skips the browser tests, and one line saying which and how', async () => {
    expect(await browserScript({})).toEqual({
      code: 3,
      stdout: '',
      stderr:
        `browser: ${missing()} is missing, so services/api/test/settings-browser, settings-narrow, ` +
        'settings-layout and docs-browser.test.ts skip their browser tests; to run them, install ' +
        "Debian's chromium " +
        '(apt-get install chromium, as root) or set CHROMIUM_PATH to a Chromium\n',
    });
  });

  test('CI: exit 1, never a skip', async () => {
    const ran = await browserScript({ CI: 'true' });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(
      /^browser: \S+ is missing, and CI never skips the settings page's browser tests: /,
    );
  });

  test('a CHROMIUM_PATH that is missing is named in the line', async () => {
    const snapshot = join(bin, 'chrome-linux', 'chrome');
    const ran = await browserScript({ CHROMIUM_PATH: snapshot });
    expect(ran.code).toBe(3);
    expect(ran.stderr).toContain(`browser: ${snapshot} is missing, so `);
  });
});

describe('interpreters.sh', () => {
  const interpretersScript = (env: Record<string, string>) => runScript('interpreters.sh', env);

  test('not CI: exit 3, the missing interpreters on stdout for test.sh, and one line each naming the package', async () => {
    const ran = await interpretersScript({});
    expect(ran.code).toBe(3);
    expect(ran.stdout).toBe('python3 php ruby go\n');
    expect(ran.stderr.split('\n')).toEqual([
      ...[
        ['python3', 'python3'],
        ['php', 'php-cli'],
        ['ruby', 'ruby'],
        ['go', 'golang-go'],
      ].map(
        ([interpreter, pkg]) =>
          `interpreters: ${interpreter} is missing, so services/dispatcher/test/recipes.test.ts skips the ` +
          `${interpreter} recipe; to run it, install Debian's ${pkg} (apt-get install ${pkg}, as root)`,
      ),
      '',
    ]);
  });

  test('CI: exit 1, never a skip', async () => {
    const ran = await interpretersScript({ CI: 'true' });
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toMatch(/^interpreters: python3 is missing, and CI never skips the recipes' tests: /);
  });
});

/**
 * Debian's services, as this machine and CI have them: services.sh finds them up on their ports.
 * A laptop whose tests run the services in containers has none, and skips this.
 */
const debianServices = ['pg_ctlcluster', 'pg_isready', 'redis-cli', 'redis-server'].every((t) => which(t));

(debianServices ? describe : describe.skip)('services.sh', () => {
  let tools: string;
  let marks: string;
  beforeAll(() => {
    tools = mkdtempSync(join(tmpdir(), 'trips-services-tools-'));
    marks = mkdtempSync(join(tmpdir(), 'trips-services-marks-'));
    chmodSync(tools, 0o755);
    chmodSync(marks, 0o777);
    for (const tool of [
      'bash',
      'seq',
      'sleep',
      'ls',
      'head',
      'pg_ctlcluster',
      'pg_isready',
      'redis-cli',
      'redis-server',
    ]) {
      symlinkSync(which(tool), join(tools, tool));
    }
    // RabbitMQ's commands as a user who is not root nor rabbitmq has them: rabbitmqctl cannot read
    // the node's cookie and fails; rabbitmq-server notes that it was asked to start a broker.
    const fake = (name: string, body: string) => {
      writeFileSync(join(tools, name), `#!/bin/bash\necho "$*" >> ${join(marks, name)}\n${body}\n`);
      chmodSync(join(tools, name), 0o755);
    };
    fake('rabbitmqctl', 'exit 69');
    fake('rabbitmq-diagnostics', 'exit 69');
    fake('rabbitmq-server', 'exit 1');
  });
  afterAll(() => {
    rmSync(tools, { recursive: true, force: true });
    rmSync(marks, { recursive: true, force: true });
  });

  test('a broker answering on its port is up, whoever asks: no second one is started', async () => {
    const ran = await runScript('services.sh', { PATH: tools });
    expect(ran).toEqual({ code: 0, stdout: '', stderr: 'services: PostgreSQL, RabbitMQ and Redis are up\n' });
    expect(existsSync(join(marks, 'rabbitmq-server'))).toBe(false);
  });
});

/** The machine's own Node when it is older than 24 (Debian's 20 here and in CI); a laptop may have none. */
const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find(
  (path) =>
    existsSync(path) &&
    Number(execFileSync(path, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 24,
);

(olderNode ? describe : describe.skip)('pnpm tripctl and pnpm trips without . scripts/toolchain.sh', () => {
  let pnpmOnly: string;
  beforeAll(() => {
    // pnpm itself, as a developer who installed it globally has it, without the toolchain's node.
    pnpmOnly = mkdtempSync(join(tmpdir(), 'trips-pnpm-only-'));
    symlinkSync(which('pnpm'), join(pnpmOnly, 'pnpm'));
  });
  afterAll(() => rmSync(pnpmOnly, { recursive: true, force: true }));

  const pnpmRun = (script: string): Promise<{ code: number; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        join(pnpmOnly, 'pnpm'),
        ['--silent', script, '--help'],
        {
          cwd: fileURLToPath(new URL('../..', import.meta.url)),
          env: { PATH: `${pnpmOnly}:${dirname(olderNode!)}:/bin`, HOME: pnpmOnly },
          timeout: 30_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stderr }),
      );
    });

  test.each(['tripctl', 'trips'])(
    'pnpm %s: one line saying to source the toolchain, exit 1',
    async (script) => {
      const ran = await pnpmRun(script);
      expect(ran.code).toBe(1);
      expect(ran.stderr).toMatch(
        new RegExp(
          `^${script} runs on Node 24, and this shell's node is v\\d+\\.\\d+\\.\\d+: run \`\\. scripts/toolchain\\.sh\` first, `,
          'm',
        ),
      );
      expect(ran.stderr).not.toMatch(/ERR_PNPM_UNSUPPORTED_ENGINE|SyntaxError/);
    },
  );
});
