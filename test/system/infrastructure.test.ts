// start.sh's decision (scripts/infrastructure.sh): this machine's PostgreSQL, RabbitMQ and Redis
// when they answer, else docker compose's. This machine has no Docker engine, so the compose way
// is not exercised here; the local way and the failure are.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './cluster.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function decide(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = 'set -euo pipefail; . scripts/infrastructure.sh; echo "$infrastructure"';
  return new Promise((resolve) => {
    execFile(
      'bash',
      ['-c', script],
      { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

test("the machine's services answer: start.sh uses them and says so", async () => {
  const ran = await decide({
    DATABASE_URL: process.env.DATABASE_URL!,
    AMQP_URL: process.env.AMQP_URL!,
    REDIS_URL: process.env.REDIS_URL!,
  });
  expect(ran).toEqual({ code: 0, stdout: "this machine's PostgreSQL, RabbitMQ and Redis\n", stderr: '' });
});

test('some do not answer and Docker does not either: one message naming both ways out, exit 1', async () => {
  const [pg, redis] = await Promise.all([freePort(), freePort()]);
  const ran = await decide({
    DATABASE_URL: `postgres://postgres@127.0.0.1:${pg}/trips`,
    AMQP_URL: process.env.AMQP_URL!,
    REDIS_URL: `redis://127.0.0.1:${redis}`,
    DOCKER_HOST: 'unix:///nonexistent/docker.sock',
  });
  expect(ran.code).toBe(1);
  expect(ran.stdout).toBe('');
  expect(ran.stderr).toBe(
    `start: PostgreSQL at 127.0.0.1:${pg} and Redis at 127.0.0.1:${redis} do not answer, and Docker does not either (docker info failed).\n` +
      'Either start PostgreSQL, RabbitMQ and Redis (on Debian `bash scripts/services.sh`), or start Docker,\n' +
      'and start.sh runs them with docker compose (docs/operations.md, "On a laptop").\n',
  );
});
