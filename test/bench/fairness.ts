// `pnpm bench:fairness` (issue 23, item 5): does one agency's bulk import starve another agency's
// webhooks? Loopback only, bounded in time. Per variant, a fresh test database and AMQP prefix, one
// recorder and one dispatcher as child processes with production defaults (except
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true and WEBHOOK_CA_FILE for the local receivers' test CA), and
// two HTTPS receivers in processes of their own (test/bench/fairness-receiver.ts):
//   - agency B: one webhook (trip.created) that always answers 200 at once. B writes one trip every
//     200 ms for the whole run, each INSERT its own transaction, as the host application writes;
//   - agency A: one webhook whose endpoint depends on the variant. After a warm-up and a baseline
//     (BENCH_BASELINE_SECONDS, 10), A imports BENCH_FLOOD (20,000) trips in four
//     `INSERT … SELECT generate_series` statements, one after the other.
// Variants (BENCH_FAIRNESS_VARIANTS, comma-separated, default all):
//   fast               A's endpoint answers at once
//   slow               A's endpoint answers after 2 s
//   dead               A's webhook points at a loopback port where nothing listens (connection
//                      refused); afterwards BENCH_DEAD_SECONDS (300) more with nothing written (B stops too)
//   hanging+trickling  A's endpoint fast, plus 30 more webhooks of A: 15 that never answer (the
//                      dispatcher gives up at WEBHOOK_TIMEOUT, 10 s), 15 that send 200 and headers
//                      at once and then the body a byte a second
//   flood-100k         A fast, five times the flood (100,000 trips)
// What it prints, per variant:
//   - B, commit → received (the INSERT's answer → the receiver's arrival, same clock), p50/p99/max,
//     (a) in the baseline and (b) for B's trips committed from the flood's start until A is drained
//     or the cap (BENCH_CAP_SECONDS, default 6 ms per flooded trip, at least 60 s: 120 s for
//     20,000) passes. A B delivery not arrived 65 s after its window counts as infinitely late (∞).
//     Target: p99 ≤ 500 ms and max ≤ 1000 ms during the flood, in every variant;
//   - A's drain: flood start → the receiver has A's last distinct trip, or "not drained in N s".
//     Target (fast, 20,000 trips): no slower than today, 23–32 s by hand at bfbf42d, so ≤ 32 s;
//   - the dispatcher's delivery outcomes (trips_deliveries_total, every label it shows) at the end
//     of the flood window, and each process's CPU over it;
//   - dead only, over the BENCH_DEAD_SECONDS after the flood window: the dispatcher's CPU (% of one
//     core, /proc/<pid>/stat; target < 2 %), its log lines, the outcomes counted in that period and
//     the broker messages the dispatcher published (the outcomes that republish: retry_scheduled,
//     deferred, queued). B stops writing for that period: the dispatcher has nothing else to do.
// Then a summary table over the variants. How to read it: B's flood p99 and max against its
// baseline say whether A's import delays B (the split into commit → recorded → attempt started →
// received says whether the recorder, the way to the dispatcher's attempt, or the attempt holds B up); A's drain says what fairness costs A. Other
// engineers' runs share this 2-core machine, so figures are noisy: read the load average printed.
// A full run takes about 16 minutes (the dead variant's 300 s quiet period and 100,000 trips' drain
// are most of it); BENCH_FAIRNESS_VARIANTS, BENCH_DEAD_SECONDS and BENCH_FLOOD shorten it.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { topology } from '@trips/broker';
import { createDb, createPool } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  randomAmqpPrefix,
  type TestCa,
  type TestDatabase,
} from '@trips/testkit';
import {
  cpuBetween,
  deleteAmqp,
  pidsMatching,
  sampleCpu,
  startChild,
  warnings,
  type Child,
} from './dispatcher-procs.ts';
import { fmt, freePort, onCleanup, percentile, runBench, table } from './lib.ts';
import { startServices } from './pipeline-services.ts';

const VARIANTS = ['fast', 'slow', 'dead', 'hanging+trickling', 'flood-100k'] as const;
type VariantName = (typeof VARIANTS)[number];

const SELECTED = (process.env.BENCH_FAIRNESS_VARIANTS ?? VARIANTS.join(','))
  .split(',')
  .map((v) => v.trim())
  .filter(Boolean);
const FLOOD = Number(process.env.BENCH_FLOOD ?? 20_000);
const DEAD_SECONDS = Number(process.env.BENCH_DEAD_SECONDS ?? 300);
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 10);
/** Unmeasured, before the baseline: connections, TLS sessions, JIT. */
const WARMUP_SECONDS = 3;
const B_INTERVAL_MS = 200;
const STATEMENTS = 4;
/** The other webhooks of A in hanging+trickling, of each kind. */
const HANGING = 15;
const TRICKLING = 15;
/** After the measured windows, how long B's late deliveries may still arrive (a first retry, 1 minute, and more). */
const GRACE_SECONDS = 65;
const TARGET_B_P99_MS = 500;
const TARGET_B_MAX_MS = 1_000;
/** A's 20,000 in the fast variant, measured by hand at bfbf42d: 23–32 s. */
const TODAY_DRAIN = { trips: 20_000, from: 23, to: 32 };
const TARGET_DEAD_CPU_PERCENT = 2;
/** The outcomes whose handling publishes the delivery to RabbitMQ again. */
const REPUBLISHING = ['retry_scheduled', 'deferred', 'queued'];

const RECEIVER = fileURLToPath(new URL('./fairness-receiver.ts', import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => performance.timeOrigin + performance.now();
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISS');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const count = (n: number) => n.toLocaleString('en-US');

interface Variant {
  name: VariantName;
  /** A's main endpoint. */
  a: 'fast' | 'slow' | 'dead';
  /** A's 15 hanging and 15 trickling webhooks besides. */
  others: boolean;
  flood: number;
  /** The quiet period after the flood, measured (dead only). */
  after: boolean;
}

function variant(name: VariantName): Variant {
  switch (name) {
    case 'fast':
      return { name, a: 'fast', others: false, flood: FLOOD, after: false };
    case 'slow':
      return { name, a: 'slow', others: false, flood: FLOOD, after: false };
    case 'dead':
      return { name, a: 'dead', others: false, flood: FLOOD, after: true };
    case 'hanging+trickling':
      return { name, a: 'fast', others: true, flood: FLOOD, after: false };
    case 'flood-100k':
      return { name, a: 'fast', others: false, flood: FLOOD * 5, after: false };
  }
}

const capSeconds = (flood: number) =>
  Number(process.env.BENCH_CAP_SECONDS ?? Math.max(60, Math.round((flood * 6) / 1000)));

interface Latencies {
  n: number;
  p50: number;
  p99: number;
  max: number;
  missing: number;
}

function latencyOf(sorted: number[]): Latencies {
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? NaN,
    missing: sorted.filter((x) => x === Infinity).length,
  };
}

/** Milliseconds; ∞ for a delivery that had not arrived when the bench stopped waiting. */
const ms = (x: number) => (x === Infinity ? '∞' : fmt.ms(x));
const showLatency = (l: Latencies) =>
  `p50 ${ms(l.p50)} / p99 ${ms(l.p99)} / max ${ms(l.max)} ms (${l.n} trips${l.missing ? `, ${l.missing} not arrived ${GRACE_SECONDS} s after the window: ∞` : ''})`;

type Outcomes = Record<string, number>;

/** trips_deliveries_total by outcome, every label the dispatcher shows; undefined if it does not answer. */
async function readOutcomes(healthPort: number): Promise<Outcomes | undefined> {
  try {
    const text = await fetch(`http://127.0.0.1:${healthPort}/metrics`).then((res) => res.text());
    const outcomes: Outcomes = {};
    for (const line of text.split('\n')) {
      const match = /^trips_deliveries_total\{([^}]*)\}\s+(\S+)/.exec(line);
      if (!match) continue;
      const outcome = /outcome="([^"]*)"/.exec(match[1]!)?.[1] ?? '(none)';
      outcomes[outcome] = (outcomes[outcome] ?? 0) + Number(match[2]);
    }
    return outcomes;
  } catch {
    return undefined;
  }
}

const outcomesBetween = (a: Outcomes, b: Outcomes): Outcomes =>
  Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]));
const showOutcomes = (o: Outcomes | undefined) =>
  o
    ? Object.entries(o)
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([k, v]) => `${k} ${count(v)}`)
        .join(', ') || 'none'
    : 'metrics unavailable';
const republished = (o: Outcomes) => REPUBLISHING.reduce((n, k) => n + (o[k] ?? 0), 0);

interface Result {
  variant: Variant;
  cap: number;
  baseline: Latencies;
  flood: Latencies;
  /** ms from the flood's start, or undefined when not drained within the cap. */
  drainMs: number | undefined;
  aReceived: number;
  dead?: { cpuPercent: number; seconds: number };
  rows: string[][];
  notes: string[];
}

/** What every step of one variant shares: the variant, its names and cap, its cleanup and its log. */
interface Run {
  v: Variant;
  /** The variant's name as it goes into child processes' names. */
  key: string;
  cap: number;
  ca: TestCa;
  /** Registers a step of this variant's cleanup, run in reverse order. */
  defer: (step: () => Promise<unknown>) => void;
  log: (line: string) => void;
}

/** A receiver in a process of its own, and the base of its URLs. */
interface Receiver {
  child: Child;
  base: string;
}

/** One variant's system: its database, the receivers, the two agencies and the services. */
interface System {
  t: TestDatabase;
  receiverA: Receiver;
  receiverB: Receiver;
  agencyAId: string;
  agencyBId: string;
  /** A's main endpoint's path on its receiver. */
  aPath: string;
  dispatcher: Child;
  recorder: Child;
  /** The dispatcher's health port, where its /metrics answers. */
  healthPort: number;
}

/** B's steady writer: its trips' commit times and arrivals, how to poll them and how to stop it. */
interface WriterB {
  /** B's trips: when its INSERT's answer came (a loopback round trip after the commit, in our favour). */
  committed: Map<string, number>;
  arrived: Map<string, { at: number; recordedAt: number }>;
  writeFailures: number;
  poll: () => Promise<void>;
  stop: () => Promise<void>;
}

type Stats = {
  at: number;
  paths: Record<string, { requests: number; distinct: number; lastNewAt: number }>;
};

/** A's flood window: from its first INSERT until A is drained or the cap passes. */
interface FloodWindow {
  start: number;
  end: number;
  /** When A's receiver had A's last distinct trip; undefined when not drained within the cap. */
  drainedAt: number | undefined;
  aReceived: number;
  /** CPU seconds per group of processes over the window. */
  cpu: Record<string, number>;
  cpuSeconds: number;
  outcomes: Outcomes | undefined;
  /** When A's last INSERT … SELECT committed. */
  committedAt: number;
  /** Requests per path on A's receiver (hanging+trickling only). */
  othersStats: Stats['paths'];
}

/** The quiet period after the flood window (dead only). */
interface DeadPeriod {
  cpuPercent: number;
  seconds: number;
  to: number;
  rows: string[][];
  /** The dispatcher's log lines over the period, the first and last 3 when there are more than 6. */
  lines: string[];
}

/** B's commit → received over the baseline and the flood window, and the flood's split by stage. */
interface FiguresOfB {
  baseline: Latencies;
  flood: Latencies;
  toRecorded: number[];
  toStarted: number[];
  toReceived: number[];
}

const B_PATH = '/fast/b';

async function runVariant(v: Variant, ca: TestCa): Promise<Result> {
  const key = v.name.replace('+', '-');
  const cap = capSeconds(v.flood);
  // This variant's cleanup, in reverse order: run at its end, or by the bench's cleanup if it fails.
  const scope: (() => Promise<unknown>)[] = [];
  const defer = (step: () => Promise<unknown>) => scope.push(step);
  const release = async () => {
    while (scope.length > 0) await scope.pop()!().catch((error) => console.error(error));
  };
  onCleanup(release);
  const log = (line: string) => console.log(`[${v.name}] ${line}`);
  try {
    return await measureVariant({ v, key, cap, ca, defer, log });
  } finally {
    await release();
  }
}

/** The variant's steps in order: system, B writing, baseline, A's flood, dead period, figures. */
async function measureVariant(run: Run): Promise<Result> {
  const { v, log } = run;
  const sys = await setUpSystem(run);
  const b = startWriterB(sys, run.defer);

  log(`services up; B writing; ${WARMUP_SECONDS} s warm-up, ${BASELINE_SECONDS} s baseline`);
  await sleep(WARMUP_SECONDS * 1000);
  const baselineFrom = now();
  await sleep(BASELINE_SECONDS * 1000);
  await b.poll();

  const flood = await floodA(run, sys, b);
  const dead = v.after ? await deadPeriod(sys, b, log) : undefined;

  // B's late deliveries, then the figures.
  await b.stop();
  await waitForLateB(b, dead ? dead.to : flood.end);
  const figures = await figuresOfB(sys, b, baselineFrom, flood);
  return variantResult(run, sys, b, flood, figures, dead);
}

/** Starts a receiver in a process of its own, timing the arrivals at `timed` paths. */
async function startReceiver({ key, ca, defer }: Run, who: string, timed: string[]): Promise<Receiver> {
  const child = startChild(
    `fairness-${key}-receiver-${who}`,
    RECEIVER,
    { BENCH_TLS_KEY: ca.key, BENCH_TLS_CERT: ca.cert, BENCH_TIMED_PATHS: timed.join(',') },
    true,
  );
  defer(() => child.stop());
  const { port } = await child.next<{ port: number }>((m) => m.ready === true);
  return { child, base: `https://127.0.0.1:${port}` };
}

/** Sets up the variant's system: database, broker names, receivers, agencies and webhooks, services. */
async function setUpSystem(run: Run): Promise<System> {
  const { v, key, ca, defer } = run;
  const t = await createTestDatabase();
  defer(() => t.drop());
  const prefix = randomAmqpPrefix();
  // The default delays, as the dispatcher here runs.
  const names = topology(prefix, readConfig({}).policy.queueDelaysMs);
  defer(() => deleteAmqp(prefix, names));

  // B's receiver apart from A's, so A's flood of deliveries never delays B's timestamps.
  const receiverB = await startReceiver(run, 'b', [B_PATH]);
  const receiverA = await startReceiver(run, 'a', []);

  const agencyB = await createAgency(t.db, {
    name: 'B (steady)',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  await createWebhook(t.db, {
    agencyId: agencyB.id,
    url: receiverB.base + B_PATH,
    eventTypes: ['trip.created'],
  });
  const agencyA = await createAgency(t.db, {
    name: 'A (import)',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const aPath = `/${v.a}/a`;
  // Connection refused: a port that was free a moment ago, where nothing listens.
  const aUrl = v.a === 'dead' ? `https://127.0.0.1:${await freePort()}/dead` : receiverA.base + aPath;
  await createWebhook(t.db, { agencyId: agencyA.id, url: aUrl, eventTypes: ['trip.created'] });
  const otherPaths = v.others
    ? [
        ...Array.from({ length: HANGING }, (_, i) => `/hang/${i}`),
        ...Array.from({ length: TRICKLING }, (_, i) => `/trickle/${i}`),
      ]
    : [];
  for (const path of otherPaths) {
    await createWebhook(t.db, {
      agencyId: agencyA.id,
      url: receiverA.base + path,
      eventTypes: ['trip.created'],
    });
  }

  // The services: production defaults but for the private network and the test CA.
  const {
    dispatcher,
    recorder,
    dispatcherHealthPort: healthPort,
  } = await startServices({
    name: `fairness-${key}`,
    databaseUrl: t.url,
    amqpUrl,
    amqpPrefix: prefix,
    caFile: ca.caFile,
    defer,
  });
  const [agencyAId, agencyBId] = [agencyA.id, agencyB.id];
  return { t, receiverA, receiverB, agencyAId, agencyBId, aPath, dispatcher, recorder, healthPort };
}

/** Starts B writing one trip every B_INTERVAL_MS, on schedule whatever the earlier ones are doing. */
function startWriterB(sys: System, defer: Run['defer']): WriterB {
  const writerB = createDb(sys.t.url, { max: 4, applicationName: 'bench-fairness-b' });
  defer(() => writerB.destroy());
  let writing = true;
  const b: WriterB = {
    committed: new Map(),
    arrived: new Map(),
    writeFailures: 0,
    poll: async () => {
      const { arrivals } = await sys.receiverB.child.request<{
        arrivals: [string, string, number, number][];
      }>({ op: 'arrivals' });
      for (const [, id, at, recordedAt] of arrivals) {
        if (!b.arrived.has(id)) b.arrived.set(id, { at, recordedAt });
      }
    },
    stop: async () => {
      writing = false;
      await loop;
    },
  };
  const loop = (async () => {
    const pending = new Set<Promise<void>>();
    const started = performance.now();
    for (let written = 0; writing; await sleep(5)) {
      const due = Math.floor((performance.now() - started) / B_INTERVAL_MS) + 1;
      for (; written < due; written++) {
        const id = `trp_b${written}`;
        const write: Promise<void> = writerB
          .insertInto('trips')
          .values({ id, agency_id: sys.agencyBId, title: 'Steady', num_days: 3 })
          .execute()
          .then(
            () => void b.committed.set(id, now()),
            () => void b.writeFailures++,
          )
          .finally(() => pending.delete(write));
        pending.add(write);
      }
    }
    await Promise.all(pending);
  })();
  defer(b.stop);
  return b;
}

/** What A's receiver has had so far, per path. */
const statsOfA = (sys: System) => sys.receiverA.child.request<Stats>({ op: 'stats' });

/** The processes whose CPU the flood window measures, by group. */
const cpuGroupsOf = (sys: System) => ({
  dispatcher: () => [sys.dispatcher.process.pid!],
  recorder: () => [sys.recorder.process.pid!],
  receivers: () => [sys.receiverA.child.process.pid!, sys.receiverB.child.process.pid!],
  postgres: () => pidsMatching(sys.t.name),
  rabbitmq: () => pidsMatching('beam.smp'),
  bench: () => [process.pid],
});

/** A's flood in four INSERT … SELECT generate_series, watched until A is drained or the cap. */
async function floodA({ v, cap, defer, log }: Run, sys: System, b: WriterB): Promise<FloodWindow> {
  const cpuGroups = cpuGroupsOf(sys);
  const cpuBefore = sampleCpu(cpuGroups);
  // A bulk import: one connection, four statements of a quarter each, each its own transaction.
  const writerA = createPool(sys.t.url, { max: 1, applicationName: 'bench-fairness-a' });
  defer(() => writerA.end());
  log(`flood: A imports ${count(v.flood)} trips; waiting until A is drained or ${cap} s`);
  const start = now();
  const written = (async () => {
    const per = Math.ceil(v.flood / STATEMENTS);
    for (let from = 1; from <= v.flood; from += per) {
      const to = Math.min(v.flood, from + per - 1);
      await writerA.query(
        `INSERT INTO trips (id, agency_id, title, num_days)
         SELECT 'trp_a' || g, $1, 'Import', 3 FROM generate_series($2::int, $3::int) g`,
        [sys.agencyAId, from, to],
      );
    }
    return now();
  })();
  // Not awaited until the window ends; a failure is reported then, not as an unhandled rejection.
  written.catch(() => {});
  const capAt = start + cap * 1000;
  let drainedAt: number | undefined;
  let aReceived = 0;
  let lastReport = start;
  while (now() < capAt && sys.dispatcher.process.exitCode === null) {
    await sleep(250);
    await b.poll();
    const a = (await statsOfA(sys)).paths[sys.aPath];
    aReceived = a?.distinct ?? 0;
    if (aReceived >= v.flood) {
      drainedAt = a!.lastNewAt;
      break;
    }
    if (now() - lastReport >= 15_000) {
      lastReport = now();
      log(`  ${seconds(lastReport - start)}: A received ${count(aReceived)} of ${count(v.flood)}`);
    }
  }
  if (sys.dispatcher.process.exitCode !== null) {
    throw new Error(
      `the dispatcher exited with ${sys.dispatcher.process.exitCode}:\n${sys.dispatcher.log().slice(-2_000)}`,
    );
  }
  const end = drainedAt ?? Math.min(now(), capAt);
  const cpu = cpuBetween(cpuBefore, sampleCpu(cpuGroups));
  const cpuSeconds = (now() - start) / 1000;
  const outcomes = await readOutcomes(sys.healthPort);
  const committedAt = await written;
  const othersStats = v.others ? (await statsOfA(sys)).paths : {};
  log(
    drainedAt
      ? `A drained in ${seconds(drainedAt - start)}`
      : `A not drained in ${cap} s (${count(aReceived)} of ${count(v.flood)})`,
  );
  return { start, end, drainedAt, aReceived, cpu, cpuSeconds, outcomes, committedAt, othersStats };
}

/** The five messages the dispatcher logged most, with how often. */
function topMessages(lines: string[]): string {
  const byMessage = new Map<string, number>();
  for (const line of lines) {
    let msg = '(not JSON)';
    try {
      msg = String((JSON.parse(line) as { msg?: unknown }).msg);
    } catch {
      // kept as not JSON
    }
    byMessage.set(msg, (byMessage.get(msg) ?? 0) + 1);
  }
  return [...byMessage]
    .sort(([, x], [, y]) => y - x)
    .slice(0, 5)
    .map(([msg, n]) => `"${msg}" ${count(n)}`)
    .join(', ');
}

/** Stops B and measures what the dead backlog alone costs the dispatcher over DEAD_SECONDS. */
async function deadPeriod(sys: System, b: WriterB, log: Run['log']): Promise<DeadPeriod> {
  // Nothing else to do: B stops too, so the period measures what the dead backlog alone costs.
  await b.stop();
  log(`quiet period: ${DEAD_SECONDS} s, neither A nor B writes`);
  const { dispatcher } = sys;
  const dispatcherCpu = { dispatcher: cpuGroupsOf(sys).dispatcher };
  const linesBefore = dispatcher.log().split('\n').length - 1;
  const outcomesBefore = await readOutcomes(sys.healthPort);
  const cpuA = sampleCpu(dispatcherCpu);
  const from = now();
  while (now() < from + DEAD_SECONDS * 1000) {
    await sleep(1_000);
    await b.poll();
  }
  const to = now();
  const cpuSeconds = cpuBetween(cpuA, sampleCpu(dispatcherCpu)).dispatcher!;
  const outcomesAfter = await readOutcomes(sys.healthPort);
  const lines = dispatcher.log().split('\n').slice(linesBefore, -1);
  const period = (to - from) / 1000;
  const cpuPercent = (cpuSeconds / period) * 100;
  const top = topMessages(lines);
  const periodOutcomes =
    outcomesBefore && outcomesAfter ? outcomesBetween(outcomesBefore, outcomesAfter) : undefined;
  const rows = [
    [
      `dead, ${period.toFixed(0)} s after the flood window: dispatcher CPU`,
      `${cpuPercent.toFixed(2)} % of one core (${cpuSeconds.toFixed(1)} CPU s)`,
      `< ${TARGET_DEAD_CPU_PERCENT} %: ${verdict(cpuPercent < TARGET_DEAD_CPU_PERCENT)}`,
    ],
    [`dead, same period: dispatcher log lines`, `${count(lines.length)}${top ? ` (${top})` : ''}`, ''],
    [`dead, same period: delivery outcomes`, showOutcomes(periodOutcomes), ''],
    [
      `dead, same period: broker messages published by the dispatcher (${REPUBLISHING.join(' + ')})`,
      periodOutcomes ? count(republished(periodOutcomes)) : 'metrics unavailable',
      '',
    ],
  ];
  return {
    cpuPercent,
    seconds: period,
    to,
    rows,
    lines: lines.length <= 6 ? lines : [...lines.slice(0, 3), '…', ...lines.slice(-3)],
  };
}

/** Waits up to GRACE_SECONDS for B's trips committed before `measuredTo` that have not arrived yet. */
async function waitForLateB(b: WriterB, measuredTo: number): Promise<void> {
  const late = () => [...b.committed].some(([id, at]) => at < measuredTo && !b.arrived.has(id));
  const graceEnd = now() + GRACE_SECONDS * 1000;
  while (late() && now() < graceEnd) {
    await sleep(250);
    await b.poll();
  }
  await b.poll();
}

/** B's commit → received in the baseline and the flood window, and where its time went in the flood. */
async function figuresOfB(
  sys: System,
  b: WriterB,
  baselineFrom: number,
  flood: FloodWindow,
): Promise<FiguresOfB> {
  const { committed, arrived } = b;
  const trips = (from: number, to: number) => [...committed].filter(([, at]) => at >= from && at < to);
  const latencies = (from: number, to: number) =>
    latencyOf(
      trips(from, to)
        .map(([id, at]) => (arrived.get(id)?.at ?? Infinity) - at)
        .sort((x, y) => x - y),
    );
  // Where B's time went during the flood: commit → recorded (the event's created_at, whole ms) →
  // the dispatcher started its attempt (webhook_attempts.attempted_at: publishing, the events
  // queue, fan-out) → received.
  const startedAt = new Map(
    (
      await sys.t.db
        .selectFrom('webhook_attempts')
        .innerJoin('events', 'events.id', 'webhook_attempts.event_id')
        .select(['events.object_id', 'webhook_attempts.attempted_at'])
        .where('events.agency_id', '=', sys.agencyBId)
        .where('webhook_attempts.attempt', '=', 1)
        .execute()
    ).map((r) => [r.object_id, new Date(r.attempted_at).getTime()]),
  );
  const split = (of: (at: number, a: { at: number; recordedAt: number; startedAt: number }) => number) =>
    trips(flood.start, flood.end)
      .filter(([id]) => arrived.has(id) && startedAt.has(id))
      .map(([id, at]) => of(at, { ...arrived.get(id)!, startedAt: startedAt.get(id)! }))
      .sort((x, y) => x - y);
  return {
    baseline: latencies(baselineFrom, flood.start),
    flood: latencies(flood.start, flood.end),
    toRecorded: split((at, a) => a.recordedAt - at),
    toStarted: split((_, a) => a.startedAt - a.recordedAt),
    toReceived: split((_, a) => a.at - a.startedAt),
  };
}

/** The variant's rows and notes, as the report prints them. */
function variantResult(
  { v, cap }: Run,
  sys: System,
  b: WriterB,
  flood: FloodWindow,
  figures: FiguresOfB,
  dead: DeadPeriod | undefined,
): Result {
  const spread = (xs: number[]) => `p99 ${fmt.ms(percentile(xs, 99))} / max ${fmt.ms(xs.at(-1) ?? NaN)} ms`;
  const { drainedAt } = flood;
  const drainMs = drainedAt === undefined ? undefined : drainedAt - flood.start;
  const drainTarget = v.name === 'fast' && v.flood === TODAY_DRAIN.trips;
  const rows: string[][] = [
    [
      `B, baseline (${BASELINE_SECONDS} s before the flood): commit → received`,
      showLatency(figures.baseline),
      '',
    ],
    [
      `B, during the flood (${seconds(flood.end - flood.start)}, until ${drainedAt ? 'A drained' : 'the cap'}): commit → received`,
      showLatency(figures.flood),
      `p99 ≤ ${TARGET_B_P99_MS} ms: ${verdict(figures.flood.p99 <= TARGET_B_P99_MS)}; max ≤ ${TARGET_B_MAX_MS} ms: ${verdict(figures.flood.max <= TARGET_B_MAX_MS)}`,
    ],
    [
      `B, during the flood: commit → recorded / → attempt started / → received`,
      `${spread(figures.toRecorded)} / ${spread(figures.toStarted)} / ${spread(figures.toReceived)}`,
      '',
    ],
    [
      `A, ${count(v.flood)} trips: flood start → last delivered`,
      drainMs === undefined
        ? `not drained in ${cap} s (${count(flood.aReceived)} of ${count(v.flood)} received)`
        : seconds(drainMs),
      drainTarget
        ? `≤ ${TODAY_DRAIN.to} s (today ${TODAY_DRAIN.from}–${TODAY_DRAIN.to} s): ${verdict(drainMs !== undefined && drainMs <= TODAY_DRAIN.to * 1000)}`
        : '',
    ],
    [
      `A's ${STATEMENTS} INSERT … SELECT statements committed after`,
      seconds(flood.committedAt - flood.start),
      '',
    ],
    [`dispatcher outcomes at the end of the flood window`, showOutcomes(flood.outcomes), ''],
    ...(dead?.rows ?? []),
  ];
  const notes = [
    `CPU over the flood window (${flood.cpuSeconds.toFixed(1)} s), % of one core: ${Object.entries(flood.cpu)
      .map(([group, s]) => `${group} ${((s / flood.cpuSeconds) * 100).toFixed(0)}`)
      .join(', ')}`,
    `B: ${b.committed.size} trips written, ${b.writeFailures} failed writes`,
  ];
  for (const service of [sys.dispatcher, sys.recorder]) {
    const lines = warnings(service.log());
    notes.push(`warnings in the ${service.name.split('-').at(-1)}'s log: ${count(lines.length)}`);
    for (const line of lines.slice(0, 3)) notes.push(`  ${line.slice(0, 300)}`);
  }
  if (dead) {
    notes.push(
      `dispatcher log lines of the quiet period${dead.lines.length ? ', first and last 3:' : ': none'}`,
    );
    notes.push(...dead.lines.map((line) => `  ${line.slice(0, 300)}`));
  }
  if (v.others) {
    const sum = (prefix: string) =>
      Object.entries(flood.othersStats)
        .filter(([path]) => path.startsWith(prefix))
        .reduce((n, [, s]) => n + s.requests, 0);
    notes.push(
      `A's other webhooks over the flood window: ${count(sum('/hang/'))} requests to the ${HANGING} hanging, ${count(sum('/trickle/'))} to the ${TRICKLING} trickling`,
    );
  }
  const deadFigures = dead && { cpuPercent: dead.cpuPercent, seconds: dead.seconds };
  return {
    variant: v,
    cap,
    baseline: figures.baseline,
    flood: figures.flood,
    drainMs,
    aReceived: flood.aReceived,
    dead: deadFigures,
    rows,
    notes,
  };
}

async function main() {
  const unknown = SELECTED.filter((name) => !(VARIANTS as readonly string[]).includes(name));
  if (unknown.length > 0)
    throw new Error(`unknown variant(s) ${unknown.join(', ')}; known: ${VARIANTS.join(', ')}`);
  const started = now();
  const loadBefore = os.loadavg();
  const ca = await createTestCa();
  const results: Result[] = [];
  for (const name of SELECTED as VariantName[]) {
    const variantStarted = now();
    results.push(await runVariant(variant(name), ca));
    console.log(`[${name}] done in ${seconds(now() - variantStarted)}`);
  }

  // ---- Report ----
  console.log();
  console.log(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
  );
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `load average before ${load(loadBefore)}, after ${load(os.loadavg())}; run took ${seconds(now() - started)}`,
  );
  for (const r of results) {
    console.log();
    console.log(
      `### ${r.variant.name}: A's endpoint ${r.variant.a}${r.variant.others ? `, plus ${HANGING} hanging and ${TRICKLING} trickling webhooks` : ''}, ${count(r.variant.flood)} trips, cap ${r.cap} s`,
    );
    console.log();
    console.log(table(['measurement', 'figure', 'target'], r.rows));
    console.log();
    for (const note of r.notes) console.log(note);
  }
  console.log();
  console.log('### summary');
  console.log();
  const pm = (l: Latencies) => `${ms(l.p99)} / ${ms(l.max)}`;
  console.log(
    table(
      [
        'variant',
        'B baseline p99 / max ms',
        'B flood p99 / max ms',
        `B p99 ≤ ${TARGET_B_P99_MS}, max ≤ ${TARGET_B_MAX_MS}`,
        'A drained',
        'dead: dispatcher CPU',
      ],
      results.map((r) => [
        r.variant.name,
        pm(r.baseline),
        pm(r.flood),
        `${verdict(r.flood.p99 <= TARGET_B_P99_MS)} / ${verdict(r.flood.max <= TARGET_B_MAX_MS)}`,
        r.drainMs === undefined
          ? `not in ${r.cap} s (${count(r.aReceived)} of ${count(r.variant.flood)})`
          : `${seconds(r.drainMs)}${r.variant.name === 'fast' && r.variant.flood === TODAY_DRAIN.trips ? ` (≤ ${TODAY_DRAIN.to} s: ${verdict(r.drainMs <= TODAY_DRAIN.to * 1000)})` : ''}`,
        r.dead
          ? `${r.dead.cpuPercent.toFixed(2)} % over ${r.dead.seconds.toFixed(0)} s (< ${TARGET_DEAD_CPU_PERCENT} %: ${verdict(r.dead.cpuPercent < TARGET_DEAD_CPU_PERCENT)})`
          : '',
      ]),
    ),
  );
}

await runBench(main);
