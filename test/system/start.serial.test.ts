import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { queueNames, topology } from '@trips/broker';
import { readConfig } from '@trips/dispatcher';
import {
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  waitFor,
  type TestDatabase,
} from '@trips/testkit';
import { freePort } from './cluster.ts';

// The README's first command, `bash scripts/start.sh`, as someone trying the system runs it: the
// demo key it prints reads a trip, the simulator's changes reach the demo receiver as verified
// webhooks, and Ctrl-C stops everything, each service once and gracefully. Serial: it runs the
// whole system (four processes and the simulator) and writes the demo CA into the repository's
// .demo/, which another run of it would share.

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
let t: TestDatabase;
const prefix = randomAmqpPrefix();

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await deleteAmqpObjects({
    queues: queueNames(topology(prefix, readConfig({}).policy.queueDelaysMs)),
    exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`],
  });
  await t.drop();
});

test('start.sh: a working demo key, verified webhooks, and Ctrl-C stops every service gracefully', async () => {
  const [api, metrics, recorder, dispatcher, receiver] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
  const script = spawn('bash', ['scripts/start.sh'], {
    cwd: repoRoot,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      AMQP_PREFIX: prefix,
      PORT: String(api),
      API_METRICS_PORT: String(metrics),
      RECORDER_HEALTH_PORT: String(recorder),
      DISPATCHER_HEALTH_PORT: String(dispatcher),
      DEMO_RECEIVER_PORT: String(receiver),
      SIMULATOR_INTERVAL: '1s',
      LOG_LEVEL: 'info',
    },
  });
  let output = '';
  script.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  script.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => script.on('exit', (code) => resolve(code)));
  try {
    const key = await waitFor(() => /Demo API key \(shown once\): (tps_\S+)/.exec(output)?.[1], {
      timeoutMs: 60_000,
      what: 'the demo key',
    });
    await waitFor(() => output.includes("Infrastructure: this machine's PostgreSQL, RabbitMQ and Redis."), {
      timeoutMs: 5_000,
      what: 'the banner naming the services it used',
    });
    const tripUrl =
      /curl -H "Authorization: Bearer tps_\S+" (http:\/\/localhost:\d+\/api\/v1\/trips\/trp_\w+)/.exec(
        output,
      )?.[1];
    expect(tripUrl).toBeDefined();
    const trip = await fetch(tripUrl!, { headers: { authorization: `Bearer ${key}` } });
    expect(trip.status).toBe(200);
    expect(await trip.json()).toMatchObject({ object: 'trip' });

    await waitFor(() => (output.match(/signature verified/g) ?? []).length >= 3, {
      timeoutMs: 30_000,
      what: 'three verified deliveries at the demo receiver',
    });

    process.kill(-script.pid!, 'SIGINT'); // Ctrl-C
    expect(await exited).toBe(0);
    for (const service of ['api', 'recorder', 'dispatcher']) {
      expect(output).toMatch(new RegExp(`"name":"${service}"[^\\n]*"msg":"stopped"`));
    }
    expect(output).not.toContain('second signal');
    await expect(fetch(`http://127.0.0.1:${api}/healthz`)).rejects.toThrow();
  } finally {
    // After a failure: the script's own stop first (it signals each process it started), then
    // SIGKILL for whatever is left that logged its pid.
    let done = false;
    void exited.then(() => (done = true));
    if (script.exitCode === null && script.signalCode === null) {
      script.kill('SIGTERM');
      await waitFor(() => done, { timeoutMs: 30_000 }).catch(() => {});
    }
    const pids = [-script.pid!, ...[...output.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1]))];
    for (const pid of new Set(pids)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone, as it should be.
      }
    }
  }
}, 120_000);
