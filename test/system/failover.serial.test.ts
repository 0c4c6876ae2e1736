import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerAddress, connectToFirst, declareTopology, queueNames, topology } from '@trips/broker';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { createWebhook } from '@trips/db/webhooks';
import {
  createActivity,
  createTestCa,
  createTestDatabase,
  randomAmqpPrefix,
  startReceiver,
  waitFor,
  type Activity,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { agencyWithOwners } from '../../services/dispatcher/test/support.ts';
import { freePort, Replica, startAll } from './cluster.ts';
import { LocalRabbitCluster, type QueueState } from './rabbitmq-cluster.ts';

// Issue 27: the recorder and two dispatchers on a three-node RabbitMQ cluster of the test's own
// (scripts/rabbitmq-cluster.sh), agencies writing a steady stream, while the node leading the events
// queue is killed with -9, comes back, and then a second node is stopped gracefully. At most one node
// is down at any time: two of three are a majority, so every quorum queue keeps a leader and
// deliveries must resume, within RESUME_BOUND_MS of each fault. Invariants: every recorded event
// delivered at least once, nothing parked, no confirmed event lost, the restarted node back in
// every queue's membership. Serial: the cluster's three nodes take the machine's cores for a while.
//   flock /tmp/trips-heavy.lock bash scripts/test.sh test/system/failover.serial.test.ts

/** Deliveries resume within this of a node's loss (the target); the figures are printed. */
const RESUME_BOUND_MS = 10_000;
/** How long the writers write before the first fault, between the faults, and after the last. */
const CALM_MS = 8_000;
const RETRY_DELAYS = '1s,2s';

/**
 * The cluster's nodes are the machine's own RabbitMQ installation, as on Debian and in CI. A laptop
 * whose tests run their services in containers may have none: then this test is skipped, saying so.
 */
const rabbitmqInstalled =
  spawnSync('bash', ['-c', 'command -v rabbitmq-server || test -x /usr/lib/rabbitmq/bin/rabbitmq-server'])
    .status === 0;
if (!rabbitmqInstalled)
  console.warn('failover test skipped: no RabbitMQ installed on this machine to cluster');

/**
 * Quarantined from the default run, on purpose and in the open (issue 27 stays open for it): in one
 * fresh-clone CI run of about eight runs it found events recorded but never delivered within a minute
 * of the graceful stop of the node leading the express and retry queues. RabbitMQ's source refutes
 * both suspicions as stated; the idle consumer reopening mitigates the windows it does show, which
 * is no proof of a fix, so it runs when asked until a failure's kept evidence is read:
 * FAILOVER_TEST=1 bash scripts/test.sh test/system/failover.serial.test.ts
 * (docs/operations.md, "The failover test").
 */
const asked = process.env.FAILOVER_TEST === '1';
if (rabbitmqInstalled && !asked)
  console.warn('failover test quarantined (issue 27): run it with FAILOVER_TEST=1');

let ca: TestCa;
let t: TestDatabase;
let cluster: LocalRabbitCluster | undefined;
let receiver: TestReceiver;
const prefix = randomAmqpPrefix();
const replicas: Replica[] = [];
let writing = true;

beforeAll(async () => {
  if (!rabbitmqInstalled) return;
  [ca, t, cluster] = await Promise.all([createTestCa(), createTestDatabase(), LocalRabbitCluster.up()]);
  receiver = await startReceiver(ca);
  receiver.answer = () => ({ status: 204 });
}, 240_000);

afterAll(async () => {
  writing = false;
  await Promise.all(replicas.map((r) => r.stop(5_000).catch(() => r.cleanup())));
  await Promise.all(replicas.map((r) => r.cleanup()));
  await cluster?.down();
  await receiver?.close();
  await t?.drop();
}, 240_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function write(activity: Activity): Promise<void> {
  while (writing) {
    await activity.step().catch(() => sleep(250));
    await sleep(100 + Math.random() * 100);
  }
}

/** The recorder and two dispatchers (first: they declare the queues), all given every node's URL. */
async function startServices(amqpUrl: string): Promise<void> {
  const common = {
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    EVENT_GROUP_QUIET: '1s',
    EVENT_GROUP_MAX: '2s',
    WEBHOOK_RETRY_DELAYS: RETRY_DELAYS,
    WEBHOOK_TIMEOUT: '2s',
    LOG_LEVEL: 'info',
  };
  for (const n of [1, 2]) {
    const port = await freePort();
    const env = {
      ...common,
      DISPATCHER_HEALTH_PORT: String(port),
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      DISPATCHER_STOP_TIMEOUT: '5s',
      // Messages a queue's old leader stranded on a consumer come back within seconds of the
      // writers stopping, well inside the minute the test waits (docs/operations.md).
      DISPATCHER_CONSUMER_IDLE_REOPEN: '5s',
    };
    replicas.push(new Replica('dispatcher', `dispatcher-${n}`, env, port));
  }
  const port = await freePort();
  replicas.push(
    new Replica(
      'recorder',
      'recorder',
      { ...common, RECORDER_HEALTH_PORT: String(port), RECORDER_STOP_TIMEOUT: '5s' },
      port,
    ),
  );
  await startAll(replicas);
}

const delaysMs = [1_000, 2_000]; // RETRY_DELAYS
const eventsQueue = () => topology(prefix, delaysMs).eventsQueue;

/** The queues declared before the services start (as restored definitions would), to know their leaders. */
async function declareQueues(): Promise<void> {
  const connection = await connectToFirst(cluster!.urls, { timeout: 5_000 });
  try {
    await declareTopology(await connection.createChannel(), topology(prefix, delaysMs));
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * The node (1–3) each service replica is connected to now, from its last 'connected to RabbitMQ'
 * line (a log line may arrive a moment after the fact: call it in waitFor).
 */
function connectedNodes(): number[] {
  return replicas.map((replica) => {
    const lines = replica
      .logs()
      .join('\n')
      .split('\n')
      .filter((l) => l.includes('"connected to RabbitMQ"'));
    const broker = lines.length ? (JSON.parse(lines.at(-1)!).broker as string) : undefined;
    return cluster!.urls.findIndex((url) => brokerAddress(url) === broker) + 1; // 0: not yet
  });
}

/** Every node's URL, starting with node n's: the services connect there first. */
const urlsFrom = (n: number) => [...cluster!.urls.slice(n - 1), ...cluster!.urls.slice(0, n - 1)].join(',');

async function leaderOfEvents(): Promise<string> {
  const queues = await cluster!.queues(prefix);
  return queues.find((q) => q.name === eventsQueue())!.leader;
}

/** When each event was first delivered (a 2xx), by event id. */
function firstDeliveries(): Map<string, number> {
  const first = new Map<string, number>();
  for (const request of receiver.requests) {
    const id = String(request.headers['service-event-id']);
    if (!first.has(id)) first.set(id, request.at);
  }
  return first;
}

/** Events recorded (committed) so far: id and time. */
async function recorded(): Promise<{ id: string; at: number }[]> {
  const rows = await t.db.selectFrom('events').select(['id', 'created_at']).orderBy('seq').execute();
  return rows.map((r) => ({ id: r.id, at: new Date(r.created_at as unknown as string).getTime() }));
}

/** Events the broker has confirmed (they left events_unpublished): the confirms to hold to their word. */
async function confirmed(): Promise<Set<string>> {
  const all = await recorded();
  const pending = new Set(
    (await t.db.selectFrom('events_unpublished').select('id').execute()).map((r) => r.id),
  );
  return new Set(all.map((e) => e.id).filter((id) => !pending.has(id)));
}

interface Fault {
  /** When the test began it (before the script ran). */
  from: number;
  /** When the node was gone (the script returned). */
  to: number;
}

async function fault(action: () => Promise<void>): Promise<Fault> {
  const from = Date.now();
  await action();
  return { from, to: Date.now() };
}

/**
 * What the receivers saw of a fault, once CALM_MS has passed after it. `pause`: the longest time
 * without any webhook arriving, from the fault's start. `resume`: from the node being gone to the
 * first delivery of an event recorded after that, so one that went all the way through the
 * failover (events recorded before may have been on their way already).
 */
async function seen({ from, to }: Fault): Promise<{ pause: number; resume: number }> {
  const arrivals = receiver.requests.map((r) => r.at).filter((at) => at > from);
  const pause = Math.max(...[from, ...arrivals].map((at, i, all) => (all[i + 1] ?? Date.now()) - at));
  const first = firstDeliveries();
  const after = (await recorded()).filter((e) => e.at > to && first.has(e.id)).map((e) => first.get(e.id)!);
  return { pause, resume: after.length ? Math.min(...after) - to : Infinity };
}

async function parkedCount(): Promise<number> {
  const connection = await connectToFirst(cluster!.urls, { timeout: 5_000 });
  try {
    const ch = await connection.createChannel();
    return (await ch.checkQueue(topology(prefix, delaysMs).parkedQueue)).messageCount;
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * Where each undelivered event stands, kept with the services' logs and the queues' counts when the
 * test fails, so that a rare failure can be read afterwards rather than reproduced.
 */
async function keepEvidence(undelivered: { id: string; at: number }[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'trips-failover-test-'));
  for (const r of replicas) r.saveLogs(dir);
  cluster!.nodeLogs().forEach((text, i) => writeFileSync(join(dir, `rabbitmq-node${i + 1}.log`), text));
  const ids = undelivered.map((e) => e.id);
  const rows = async (table: 'events_unpublished' | 'webhook_attempts') =>
    ids.length
      ? t.db
          .selectFrom(table)
          .selectAll()
          .where(table === 'events_unpublished' ? 'id' : 'event_id', 'in', ids)
          .execute()
      : [];
  const held = await t.db.selectFrom('held_deliveries').selectAll().execute();
  const events = ids.length
    ? await t.db.selectFrom('events').selectAll().where('id', 'in', ids).execute()
    : [];
  const counts = await cluster!
    .ctlJson([
      'list_queues',
      'name',
      'leader',
      'messages',
      'messages_ready',
      'messages_unacknowledged',
      'consumers',
    ])
    .catch((error: Error) => error.message);
  const evidence = {
    undelivered,
    events,
    unpublished: await rows('events_unpublished'),
    attempts: await rows('webhook_attempts'),
    held,
    queues: counts,
    requests: receiver.requests.map((r) => ({ id: r.headers['service-event-id'], at: r.at })),
  };
  writeFileSync(join(dir, 'evidence.json'), JSON.stringify(evidence, null, 1));
  return dir;
}

function membership(queues: QueueState[]): string {
  return queues
    .map((q) => `${q.name.slice(prefix.length)}: ${q.online.length}/${q.members.length} online`)
    .join(', ');
}

(rabbitmqInstalled && asked ? test : test.skip)(
  'a node lost, back, and another stopped: deliveries resume, nothing lost or parked, the node rejoins',
  async () => {
    const facts: [string, string | number][] = [];
    const agencies = await Promise.all(
      ['Fairway', 'Links', 'Birdie'].map((name) => agencyWithOwners(t.db, name)),
    );
    for (const { agencyId } of agencies) {
      await createWebhook(t.db, { agencyId, url: receiver.url, eventTypes: [...EVENT_TYPE_NAMES] });
    }
    // The services connect first to the node leading the events queue, so that its loss takes both
    // the queue's leader and every service's connection: the whole failover path.
    await declareQueues();
    const killed = cluster!.numberOf(await leaderOfEvents());
    await startServices(urlsFrom(killed));
    await waitFor(() => connectedNodes().every((n) => n === killed), {
      timeoutMs: 5_000,
      what: `every service connected to node ${killed}`,
    });
    const activities = agencies.map(({ agencyId }) => createActivity(t.db, { agencyId }));
    const writers = activities.map(write);
    await sleep(CALM_MS);

    // ---- 1. kill -9 the node leading the events queue ----
    const confirmedBeforeKill = await confirmed();
    const kill = await fault(() => cluster!.kill(killed));
    await waitFor(() => connectedNodes().every((n) => n > 0 && n !== killed), {
      timeoutMs: 30_000,
      what: 'every service connected to another node',
    }).catch(() => {});
    const failedOver = connectedNodes();
    await sleep(CALM_MS);
    const afterKill = await seen(kill);
    facts.push([
      `kill -9 of node ${killed} (the events queue's leader): deliveries paused`,
      seconds(afterKill.pause),
    ]);
    facts.push(['  resumed (an event recorded after the kill delivered)', seconds(afterKill.resume)]);

    // ---- 2. the killed node comes back and rejoins its queues ----
    const restartAt = Date.now();
    await cluster!.start(killed);
    const node = cluster!.nodes[killed - 1]!;
    const rejoined = () => cluster!.queues(prefix).then((qs) => qs.every((q) => q.online.includes(node)));
    await waitFor(rejoined, {
      timeoutMs: 60_000,
      intervalMs: 1_000,
      what: 'the restarted node online in every queue',
    }).catch(() => {});
    const afterRestart = await cluster!.queues(prefix);
    facts.push([
      `node ${killed} back and in every queue's membership after`,
      seconds(Date.now() - restartAt),
    ]);
    facts.push(['membership after the restart', membership(afterRestart)]);
    await sleep(CALM_MS);

    // ---- 3. a second node stopped gracefully: the one the services moved to ----
    const stopped = failedOver[0]!;
    const led = (await cluster!.queues(prefix)).filter((q) => q.leader === cluster!.nodes[stopped - 1]);
    facts.push([
      `queues led by node ${stopped} when stopped`,
      led.map((q) => q.name.slice(prefix.length)).join(', ') || 'none',
    ]);
    const stop = await fault(() => cluster!.stop(stopped));
    facts.push([`  the stop took`, seconds(stop.to - stop.from)]);
    await sleep(CALM_MS);
    const afterStop = await seen(stop);
    facts.push([`graceful stop of node ${stopped}: deliveries paused`, seconds(afterStop.pause)]);
    facts.push(['  resumed (an event recorded after the stop delivered)', seconds(afterStop.resume)]);

    // ---- Writers stop; every recorded event must reach the receiver ----
    writing = false;
    await Promise.all(writers);
    for (const activity of activities) await activity.settle();
    const settling = Date.now();
    const undelivered = async () => {
      const first = firstDeliveries();
      return (await recorded()).filter((e) => !first.has(e.id));
    };
    await waitFor(
      async () =>
        (await t.db.selectFrom('outbox').select('id').limit(1).execute()).length === 0 &&
        (await t.db.selectFrom('event_groups').select('object_id').limit(1).execute()).length === 0 &&
        (await undelivered()).length === 0,
      { timeoutMs: 60_000, intervalMs: 500 },
    ).catch(() => {});
    facts.push(['settling after the writers stopped', seconds(Date.now() - settling)]);

    const events = await recorded();
    const first = firstDeliveries();
    const lostConfirmed = [...confirmedBeforeKill].filter((id) => !first.has(id));
    const latencies = events.filter((e) => first.has(e.id)).map((e) => first.get(e.id)! - e.at);
    facts.push(['events recorded', events.length]);
    facts.push(['webhook requests (with redeliveries)', receiver.requests.length]);
    facts.push(['events confirmed before the kill', confirmedBeforeKill.size]);
    facts.push(['longest recorded-to-delivered', seconds(Math.max(...latencies))]);
    facts.push(['events delivered over 3 s after being recorded', latencies.filter((l) => l > 3_000).length]);
    const parked = await parkedCount();
    const left = await undelivered();
    if (left.length || parked)
      facts.push(["evidence (services' logs, queues, rows)", await keepEvidence(left)]);
    const width = Math.max(...facts.map(([k]) => k.length));
    console.log(
      ['failover on a three-node cluster', ...facts.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n'),
    );

    expect(events.length).toBeGreaterThan(100);
    expect(failedOver.every((n) => n > 0 && n !== killed)).toBe(true);
    expect(connectedNodes().every((n) => n > 0 && n !== stopped)).toBe(true);
    expect(left.map((e) => e.id)).toEqual([]);
    expect(lostConfirmed).toEqual([]);
    expect(parked).toBe(0);
    for (const { pause, resume } of [afterKill, afterStop]) {
      expect(pause).toBeLessThanOrEqual(RESUME_BOUND_MS);
      expect(resume).toBeLessThanOrEqual(RESUME_BOUND_MS);
    }
    expect(Object.fromEntries(afterRestart.map((q) => [q.name, q.online.includes(node)]))).toEqual(
      Object.fromEntries(queueNames(topology(prefix, delaysMs)).map((name) => [name, true])),
    );
    for (const replica of replicas) expect(replica.unexpectedExits()).toEqual([]);
  },
  300_000,
);
