import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { queueNames, topology } from '@trips/broker';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig } from '@trips/dispatcher';
import {
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  startReceiver,
  verifySignature,
  waitFor,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { freePort } from './cluster.ts';

// The README's first command, `bash scripts/start.sh`, as someone trying the system runs it: the
// demo key it prints reads a trip, the simulator's changes reach the demo receiver as verified
// webhooks, and Ctrl-C stops everything, each service once and gracefully. A restart keeps the key,
// the webhook and the owner's session, and an owner's own HTTPS receivers on localhost get verified
// deliveries: one with a certificate from scripts/demo-cert.sh, one whose CA WEBHOOK_CA_FILE names.
// Serial: it runs the whole system (four processes and the simulator) and writes the demo CA and
// state into the repository's .demo/, which another run of it would share.

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

interface Ports {
  api: number;
  metrics: number;
  recorder: number;
  dispatcher: number;
  receiver: number;
}

async function freePorts(): Promise<Ports> {
  const [api, metrics, recorder, dispatcher, receiver] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  return { api: api!, metrics: metrics!, recorder: recorder!, dispatcher: dispatcher!, receiver: receiver! };
}

/** `bash scripts/start.sh` on these ports, its stdout and stderr gathered in `output`. */
function startScript(ports: Ports, env: Record<string, string> = {}) {
  // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
  const script = spawn('bash', ['scripts/start.sh'], {
    cwd: repoRoot,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      AMQP_PREFIX: prefix,
      PORT: String(ports.api),
      API_METRICS_PORT: String(ports.metrics),
      RECORDER_HEALTH_PORT: String(ports.recorder),
      DISPATCHER_HEALTH_PORT: String(ports.dispatcher),
      DEMO_RECEIVER_PORT: String(ports.receiver),
      SIMULATOR_INTERVAL: '1s',
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  const run = { script, output: '' };
  script.stdout.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  script.stderr.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => script.on('exit', (code) => resolve(code)));
  return { run, exited };
}

const demoAgencies = async () =>
  (
    await t.db
      .selectFrom('users')
      .select('agency_id')
      .where('email', 'like', '%@fairway-demo.example')
      .where('role', '=', 'owner')
      .execute()
  ).length;

describe('it fails fast, saying what to change, with no banner and a non-zero exit', () => {
  test('a port in use: refused before anything starts, naming the port and its variable', async () => {
    const ports = await freePorts();
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(ports.api, resolve));
    try {
      const { run, exited } = startScript(ports);
      expect(await exited).toBe(1);
      expect(run.output).toContain(
        `start.sh: port ${ports.api} is in use; the API listens there. Stop what uses it, or set PORT to a free port, e.g. PORT=${ports.api + 100} bash scripts/start.sh`,
      );
      expect(run.output).not.toContain('Demo API key');
      // Checked before the database was touched: no demo agency was made.
      expect(await demoAgencies()).toBe(0);
    } finally {
      squatter.close();
    }
  }, 120_000);

  test('a service that exits before it is ready: which one, its log line, its ports; the others stopped', async () => {
    const ports = await freePorts();
    const { run, exited } = startScript(ports, { RECORDER_POLL_INTERVAL: 'soon' });
    expect(await exited).toBe(1);
    expect(run.output).toMatch(
      /start\.sh: the recorder exited before it was ready \(exit status 1\), so the demo did not start\. Its log says:\n {2}Invalid configuration:\n {2}- RECORDER_POLL_INTERVAL[^\n]*'soon'/,
    );
    expect(run.output).toContain(
      `It listens on:\n  port ${ports.recorder}, the recorder's health probes (RECORDER_HEALTH_PORT)`,
    );
    expect(run.output).not.toContain('Demo API key');
    // The dispatcher, started before it, was stopped with it.
    expect(run.output).toMatch(/"name":"dispatcher"[^\n]*"msg":"stopped"/);
    await expect(fetch(`http://127.0.0.1:${ports.dispatcher}/healthz`)).rejects.toThrow();
    // It got as far as the demo data: one demo agency, which the run below reuses.
    expect(await demoAgencies()).toBe(1);
  }, 120_000);
});

/**
 * After a failure: the script's own stop first (it signals each process it started), then SIGKILL
 * for whatever is left that logged its pid.
 */
async function stopLeftovers({ run, exited }: ReturnType<typeof startScript>): Promise<void> {
  const script = run.script;
  let done = false;
  void exited.then(() => (done = true));
  if (script.exitCode === null && script.signalCode === null) {
    script.kill('SIGTERM');
    await waitFor(() => done, { timeoutMs: 30_000 }).catch(() => {});
  }
  const pids = [-script.pid!, ...[...run.output.matchAll(/"pid":(\d+)/g)].map((m) => Number(m[1]))];
  for (const pid of new Set(pids)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone, as it should be.
    }
  }
}

/** The demo key the banner prints, once the banner is there. */
const bannerKey = (output: string) => /Demo API key \([^)]*\): (tps_\S+)/.exec(output)?.[1];

/** Ctrl-C, and every service stopped gracefully. */
async function ctrlC({ run, exited }: ReturnType<typeof startScript>): Promise<void> {
  process.kill(-run.script.pid!, 'SIGINT');
  expect(await exited).toBe(0);
  for (const service of ['api', 'recorder', 'dispatcher']) {
    expect(run.output).toMatch(new RegExp(`"name":"${service}"[^\\n]*"msg":"stopped"`));
  }
  expect(run.output).not.toContain('second signal');
}

test('start.sh: a working demo key, verified webhooks, and Ctrl-C stops every service gracefully', async () => {
  const ports = await freePorts();
  const { api } = ports;
  const started = startScript(ports);
  const { run } = started;
  try {
    const key = await waitFor(() => bannerKey(run.output), { timeoutMs: 60_000, what: 'the demo key' });
    await waitFor(
      () => run.output.includes("Infrastructure: this machine's PostgreSQL, RabbitMQ and Redis."),
      {
        timeoutMs: 5_000,
        what: 'the banner naming the services it used',
      },
    );
    const tripUrl =
      /curl -H "Authorization: Bearer tps_\S+" (http:\/\/localhost:\d+\/api\/v1\/trips\/trp_\w+)/.exec(
        run.output,
      )?.[1];
    expect(tripUrl).toBeDefined();
    // The run that failed above made the demo agency; this one reused it.
    expect(await demoAgencies()).toBe(1);
    const trip = await fetch(tripUrl!, { headers: { authorization: `Bearer ${key}` } });
    expect(trip.status).toBe(200);
    expect(await trip.json()).toMatchObject({ object: 'trip' });

    await waitFor(() => (run.output.match(/signature verified/g) ?? []).length >= 3, {
      timeoutMs: 30_000,
      what: 'three verified deliveries at the demo receiver',
    });

    await ctrlC(started);
    await expect(fetch(`http://127.0.0.1:${api}/healthz`)).rejects.toThrow();
  } finally {
    await stopLeftovers(started);
  }
}, 120_000);

/** `bash scripts/demo-cert.sh <dir>`, as the banner says, and the key and certificate it wrote. */
function demoCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'trips-own-receiver-'));
  try {
    execFileSync('bash', ['scripts/demo-cert.sh', dir], { cwd: repoRoot, stdio: 'ignore' });
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a restart keeps the demo key, its webhook and the owner signed in, and delivers to receivers of your own', async () => {
  const rows = async () => ({
    keys: await t.db.selectFrom('api_keys').select(['id', 'revoked_at']).orderBy('id').execute(),
    webhooks: await t.db.selectFrom('webhooks').select(['id', 'disabled_at']).orderBy('id').execute(),
    sessions: await t.db.selectFrom('owner_sessions').select('user_id').execute(),
  });
  const owner = await t.db
    .selectFrom('users')
    .select(['id', 'agency_id'])
    .where('email', 'like', '%@fairway-demo.example')
    .executeTakeFirstOrThrow();
  // The owner signed in on the settings page before the restart.
  await t.db
    .insertInto('owner_sessions')
    .values({
      token_hash: 'b'.repeat(64),
      user_id: owner.id,
      csrf_token: 'c'.repeat(32),
      expires_at: new Date(Date.now() + 3600_000),
    })
    .execute();
  // Receivers of the owner's own on this machine: one with a certificate from scripts/demo-cert.sh,
  // one with a certificate of another CA, which WEBHOOK_CA_FILE names for start.sh. Each gets a
  // webhook of the demo agency for every event.
  const receivers: TestReceiver[] = [];
  const ownReceiver = async (tls: { key: string; cert: string }) => {
    const receiver = await startReceiver(tls);
    receivers.push(receiver);
    const { secret } = await createWebhook(t.db, {
      agencyId: owner.agency_id,
      url: receiver.url,
      eventTypes: [...EVENT_TYPE_NAMES],
    });
    return { receiver, secret };
  };
  let started: ReturnType<typeof startScript> | undefined;
  try {
    const mine = await ownReceiver(demoCertificate());
    const otherCa = await createTestCa();
    const theirs = await ownReceiver(otherCa);
    const before = await rows();
    expect(before.keys.filter((k) => k.revoked_at === null)).toHaveLength(before.keys.length);

    started = startScript(await freePorts(), { WEBHOOK_CA_FILE: otherCa.caFile });
    const { run } = started;
    const key = await waitFor(() => bannerKey(run.output), { timeoutMs: 60_000, what: 'the demo key' });
    const bannerAt = run.output.length;
    // The key the first run printed, still working.
    const trip = await fetch(/(http:\/\/localhost:\d+\/api\/v1\/trips\/trp_\w+)/.exec(run.output)![1]!, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(trip.status).toBe(200);
    expect(await rows()).toEqual(before);
    // The demo groups *.updated events for seconds, not production's minute, and says so.
    expect(run.output).toContain(
      'A *.updated event waits until its object has had no\nchange for 5s (at most 20s after the first)',
    );
    await waitFor(() => /webhook ✓ \w+\.updated /.test(run.output.slice(bannerAt)), {
      timeoutMs: 30_000,
      what: 'a verified *.updated delivery after the banner',
    });
    for (const own of [mine, theirs]) {
      await waitFor(() => own.receiver.requests.some((r) => verifySignature(r, own.secret)), {
        timeoutMs: 30_000,
        what: `a verified delivery at ${own.receiver.url}`,
      });
    }
    await ctrlC(started);
  } finally {
    if (started) await stopLeftovers(started);
    for (const receiver of receivers) await receiver.close();
  }
}, 150_000);
