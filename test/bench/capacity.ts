// `pnpm bench:capacity` (issue 43, item 3): how many events a second this machine carries within
// the latency target. The whole system (test/bench/system.ts): trips written one per transaction at
// a rate raised in steps (BENCH_CAPACITY_RATES, events a second: 250,500,750,1000,1250), every event
// to one webhook on a local HTTPS receiver, and the read API paced at BENCH_CAPACITY_API_RATE (300)
// requests a second beside it; one recorder and BENCH_CAPACITY_DISPATCHERS dispatchers (2, the base
// manifests' least: one webhook then gets up to twice DISPATCHER_ENDPOINT_CONCURRENCY attempts at
// once, as deployed). Each step writes for BENCH_CAPACITY_SECONDS (60), then waits for the
// queues to drain. Per step it prints commit → received (p50, p99, max), CPU per event of each
// process, and the machine's busy share with what of it the processes measured did not use. The
// result is the highest rate whose p99 stays ≤ 250 ms with the queues drained ≤ 10 s after its
// writes stop, and whose writes kept up with it (WRITTEN_SHARE); stepping stops after the first
// step that misses. Target: 1,000 events a second, writer and receiver included. The same steps
// then run with the bare pipeline (pipeline-bare.ts) in place of ours, the API and its load beside
// it as beside ours (BENCH_CAPACITY_PIPELINES: ours,bare): what the floor of the same work carries
// on this machine, in the same run.
// Other engineers' runs share this 2-core machine: read the load average printed.
import os from 'node:os';
import { createPool } from '@trips/db';
import { readSeries, sampleSum, seriesDelta, sumSeries } from './service-metrics.ts';
import { profileReport, snapshot, startProfile } from './capacity-profile.ts';
import { cpuBetween, sampleCpu, warnings } from './dispatcher-procs.ts';
import { cleanedUpAfter, fmt, onCleanup, percentile, runBench, table } from './lib.ts';
import { writeTrips } from './host-writer.ts';
import { machineBusySeconds, now, startSystem, within, type Pipeline, type System } from './system.ts';

const RATES = (process.env.BENCH_CAPACITY_RATES ?? '250,500,750,1000,1250').split(',').map(Number);
const STEP_SECONDS = Number(process.env.BENCH_CAPACITY_SECONDS ?? 60);
const API_RATE = Number(process.env.BENCH_CAPACITY_API_RATE ?? 300);
/** Unmeasured writing at the step's rate first: the pipeline reaches its pace. */
const WARMUP_SECONDS = 5;
const TARGET_P99_MS = 250;
const TARGET_DRAIN_SECONDS = 10;
const TARGET_RATE = 1_000;
/**
 * A step is carried only when the writer wrote at its rate: one that fell behind (its connections
 * all waiting on a busy Postgres) offered less than the step, and its latencies say nothing of it.
 */
const WRITTEN_SHARE = 0.98;
/** How long a step's drain is waited for, at most. */
const DRAIN_LIMIT_SECONDS = 60;
type Pool = ReturnType<typeof createPool>;
/** Prints Postgres's work per event in each step of each pipeline (capacity-profile.ts). */
const PROFILE = process.env.BENCH_CAPACITY_PROFILE === '1';
/**
 * The pipelines measured, one after the other: ours, and the bare one (pipeline-bare.ts), the
 * floor of the same work on the same machine in the same run.
 */
const PIPELINES = (process.env.BENCH_CAPACITY_PIPELINES ?? 'ours,bare')
  .split(',')
  .map((name) => name.trim()) as Pipeline[];
for (const name of PIPELINES)
  if (name !== 'ours' && name !== 'bare')
    throw new Error(`BENCH_CAPACITY_PIPELINES: ours, bare (got '${name}')`);
/** Dispatcher replicas: the base manifests run at least two (the HPA's minReplicas). */
const DISPATCHERS = Number(process.env.BENCH_CAPACITY_DISPATCHERS ?? 2);
let profileDb: Pool | undefined;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Step {
  rate: number;
  written: number;
  /** The writer kept the step's rate (WRITTEN_SHARE). */
  keptUp: boolean;
  p50: number;
  p99: number;
  max: number;
  neverArrived: number;
  drainSeconds: number;
  /** CPU µs per event, by process. */
  cpuPerEvent: Record<string, number>;
  busyShare: number;
  /**
   * The busy share not spent in the processes measured: other work on this shared machine, and the
   * kernel's (loopback networking, say). A run where it is large was not this system's alone.
   */
  otherShare: number;
  /** Where the slowest 1 % spent their time, and when they were written. */
  tail: string;
  /** Where events waited, by the recorder's and the dispatcher's metrics (ours only). */
  waits?: string;
  /** Postgres's work per event, under PROFILE. */
  profile?: string;
  api: { p99: number; failures: number };
  met: boolean;
}

async function runStep(system: System, rate: number, step: number): Promise<Step> {
  // The API load beside the measured window: paced minutes of soak-api-load.ts. It starts with the
  // writes, so that its own start (new connections, the API's first requests) falls in the warm-up
  // too, and is measured from the window's start.
  const apiDone = system.load.next<{ p99: number; failures: number }>((m) => m.done === true);
  apiDone.catch(() => {}); // awaited below; this only keeps an early crash from being unhandled
  system.load.process.send({
    op: 'run',
    url: system.api.url,
    headers: system.headers,
    paths: system.readPaths,
    rate: API_RATE,
    minutes: Math.ceil(STEP_SECONDS / 60),
    warmupSeconds: WARMUP_SECONDS + 1,
  });
  const writer = writeTrips(system.writer, system.agencyId, rate, `trp_c${step}_`, system.tripsTable);
  await sleep(WARMUP_SECONDS * 1000);
  const arrived = new Map<string, number>();
  const recorded = new Map<string, number>();
  const collect = async () => {
    for (const [id, at, recordedAt] of await system.arrivals()) {
      if (arrived.has(id)) continue;
      arrived.set(id, at);
      recorded.set(id, recordedAt);
    }
  };
  const profileBefore = PROFILE ? await snapshot(profileDb!) : undefined;
  const waitsBefore = system.pipeline === 'ours' ? await readWaits(system) : undefined;
  const measuredFrom = now();
  const cpuBefore = sampleCpu(system.cpuGroups);
  const busyBefore = machineBusySeconds();
  const writtenBefore = writer.committed.size;
  const collecting = (async () => {
    while (now() - measuredFrom < STEP_SECONDS * 1000) {
      await collect();
      await sleep(1_000);
    }
  })();
  await collecting;
  const cpu = cpuBetween(cpuBefore, sampleCpu(system.cpuGroups));
  const busy = machineBusySeconds() - busyBefore;
  const measuredTo = now();
  const waits = waitsBefore && waitsReport(seriesOfWaits(waitsBefore, await readWaits(system)));
  const written = writer.committed.size - writtenBefore;
  const profile = profileBefore && profileReport(profileBefore, await snapshot(profileDb!), written);
  const api = await within(apiDone, 180_000, 'the API load did not finish its minutes');
  await writer.stop();
  const stoppedAt = now();
  // Drained: every queue empty and every trip committed received.
  let drainSeconds = Infinity;
  while (now() - stoppedAt < DRAIN_LIMIT_SECONDS * 1000) {
    await collect();
    const left = await system.backlog();
    const notReceived = [...writer.committed.keys()].filter((id) => !arrived.has(id)).length;
    if (notReceived === 0 && Object.values(left).every((n) => n === 0)) {
      drainSeconds = (now() - stoppedAt) / 1000;
      break;
    }
    await sleep(250);
  }
  const measured = [...writer.committed].filter(([, at]) => at >= measuredFrom && at <= measuredTo);
  const latencies = measured.map(([id, at]) => (arrived.get(id) ?? Infinity) - at).sort((a, b) => a - b);
  const seconds = (measuredTo - measuredFrom) / 1000;
  const p99 = percentile(latencies, 99);
  const tail = await slowestTail(system, measured, { arrived, recorded }, p99, measuredFrom);
  const keptUp = written / seconds >= WRITTEN_SHARE * rate;
  return {
    rate,
    written: written / seconds,
    keptUp,
    p50: percentile(latencies, 50),
    p99,
    max: latencies.at(-1) ?? NaN,
    neverArrived: latencies.filter((l) => l === Infinity).length,
    drainSeconds,
    cpuPerEvent: Object.fromEntries(Object.entries(cpu).map(([name, s]) => [name, (s * 1e6) / written])),
    busyShare: busy / seconds / os.cpus().length,
    otherShare:
      Math.max(0, busy - Object.values(cpu).reduce((a, b) => a + b, 0)) / seconds / os.cpus().length,
    api,
    tail,
    waits,
    profile,
    met: keptUp && p99 <= TARGET_P99_MS && drainSeconds <= TARGET_DRAIN_SECONDS,
  };
}

/**
 * Where the slowest 1 % spent their time (medians of commit → recorded, recorded → attempt started,
 * attempt → received) and when they were written: bunched in a second or two, they were held up
 * together by one stall of the pipeline; spread out, by a queue.
 */
async function slowestTail(
  system: System,
  measured: [string, number][],
  seen: { arrived: Map<string, number>; recorded: Map<string, number> },
  p99: number,
  from: number,
): Promise<string> {
  const slow = measured.filter(
    ([id, at]) => (seen.arrived.get(id) ?? Infinity) - at >= p99 && seen.arrived.has(id),
  );
  if (slow.length === 0) return 'none';
  const attempts = new Map(
    (
      await system.t.db
        .selectFrom('webhook_attempts as a')
        .innerJoin(
          // Kysely takes `schema.table`; the typed names are those of the public schema.
          `${system.eventsTable} as e` as 'events as e',
          'e.id',
          'a.event_id',
        )
        .select(['e.object_id', 'a.attempted_at'])
        .where(
          'e.object_id',
          'in',
          slow.map(([id]) => id),
        )
        .where('a.attempt', '=', 1)
        .execute()
    ).map((r) => [r.object_id, new Date(r.attempted_at).getTime()]),
  );
  const med = (xs: number[]) =>
    fmt.ms(
      percentile(
        [...xs].sort((a, b) => a - b),
        50,
      ),
    );
  const written = slow.map(([, at]) => (at - from) / 1000);
  return (
    `${slow.length} slowest: commit → recorded ${med(slow.map(([id, at]) => seen.recorded.get(id)! - at))} ms, ` +
    `recorded → attempt ${med(slow.map(([id]) => (attempts.get(id) ?? NaN) - seen.recorded.get(id)!))} ms, ` +
    `attempt → received ${med(slow.map(([id]) => seen.arrived.get(id)! - (attempts.get(id) ?? NaN)))} ms (medians); ` +
    `written between ${Math.min(...written).toFixed(1)} and ${Math.max(...written).toFixed(1)} s into the step`
  );
}

const RECORDER_WAITS = ['trips_event_record_to_publish_seconds'] as const;
const DISPATCHER_WAITS = [
  'trips_deliveries_total',
  'trips_event_record_to_delivery_seconds',
  'trips_endpoint_line_wait_seconds',
] as const;

async function readWaits(system: System) {
  return {
    recorder: await readSeries(system.metricsPorts.recorder, RECORDER_WAITS),
    dispatcher: sumSeries(
      await Promise.all(system.dispatcherMetricsPorts.map((port) => readSeries(port, DISPATCHER_WAITS))),
    ),
  };
}

function seriesOfWaits(before: Awaited<ReturnType<typeof readWaits>>, after: typeof before) {
  return {
    recorder: seriesDelta(before.recorder, after.recorder),
    dispatcher: seriesDelta(before.dispatcher, after.dispatcher),
  };
}

/**
 * How many events took over 250 ms from their recording to RabbitMQ's confirm (the recorder) and
 * to their first 2xx (the dispatcher); how many deliveries waited in memory for the endpoint's slot
 * (the line), and how long in all: while they wait, their messages fill the prefetch, the events
 * queue fills to its bound and the recorder's publishes are refused, which is the first of these;
 * and the dispatcher's outcomes: `held` means a delivery waited in its webhook's lane (Postgres)
 * because the endpoint had no room when it came.
 */
function waitsReport({ recorder, dispatcher }: ReturnType<typeof seriesOfWaits>): string {
  const over = (series: typeof recorder, name: string, ...labels: string[]) =>
    sampleSum(series, `${name}_count`, ...labels) -
    sampleSum(series, `${name}_bucket`, 'le="0.25"', ...labels);
  const outcomes = [...dispatcher]
    .filter(([key, n]) => key.startsWith('trips_deliveries_total') && n > 0)
    .map(([key, n]) => {
      const reason = /reason="([^"]+)"/.exec(key)?.[1];
      return `${/outcome="([^"]+)"/.exec(key)?.[1]}${reason ? ` (${reason})` : ''} ${n}`;
    });
  return (
    `recorded → published over 250 ms: ${over(recorder, 'trips_event_record_to_publish_seconds')}; ` +
    `recorded → first 2xx over 250 ms: ${over(dispatcher, 'trips_event_record_to_delivery_seconds', 'attempt="first"')}; ` +
    `waited for the endpoint's slot: ${sampleSum(dispatcher, 'trips_endpoint_line_wait_seconds_count')}, ` +
    `${sampleSum(dispatcher, 'trips_endpoint_line_wait_seconds_sum').toFixed(1)} s in all; ` +
    `dispatcher outcomes: ${outcomes.join(', ') || 'none'}`
  );
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg();
  console.log(
    `bench:capacity — steps ${RATES.join(', ')} events/s, ${STEP_SECONDS} s each (after ${WARMUP_SECONDS} s unmeasured), ` +
      `the API paced at ${API_RATE} req/s beside them; pipelines ${PIPELINES.join(', ')} (ours with ${DISPATCHERS} dispatcher${DISPATCHERS === 1 ? '' : 's'})`,
  );
  const runs: Run[] = [];
  for (const pipeline of PIPELINES) {
    // One system at a time: the one measured before is stopped, so none idles beside the next.
    const run = await cleanedUpAfter(async () => {
      const system = await startSystem({}, { dispatchers: DISPATCHERS, pipeline });
      console.log(`\n${pipeline}:`);
      return { pipeline, steps: await runSteps(system), warnings: serviceWarnings(system) };
    });
    runs.push(run);
  }
  report(runs, loadBefore);
}

interface Run {
  pipeline: Pipeline;
  steps: Step[];
  warnings: string[];
}

/** The steps in turn, each printed as it ends, up to the first that misses. */
async function runSteps(system: System): Promise<Step[]> {
  if (PROFILE) {
    profileDb = createPool(system.t.url, { max: 1, applicationName: 'bench-profile' });
    onCleanup(() => profileDb!.end());
    if (!(await startProfile(profileDb))) throw new Error('BENCH_CAPACITY_PROFILE needs pg_stat_statements');
  }
  const steps: Step[] = [];
  for (const [i, rate] of RATES.entries()) {
    const step = await runStep(system, rate, i);
    steps.push(step);
    console.log(
      `${rate} events/s: written ${fmt.rps(step.written)}/s${step.keptUp ? '' : ' (behind the step: not carried)'}; commit → received p50 ${fmt.ms(step.p50)} / p99 ${fmt.ms(step.p99)} / max ${fmt.ms(step.max)} ms` +
        `${step.neverArrived ? ` (${step.neverArrived} never arrived)` : ''}; drained ${Number.isFinite(step.drainSeconds) ? `${step.drainSeconds.toFixed(1)} s` : `not within ${DRAIN_LIMIT_SECONDS} s`}; ` +
        `machine ${busyCell(step)} busy; API p99 ${fmt.ms(step.api.p99)} ms${step.api.failures ? `, ${step.api.failures} failed` : ''}; ` +
        `CPU µs per event: ${Object.entries(step.cpuPerEvent)
          .map(([name, us]) => `${name} ${us.toFixed(0)}`)
          .join(', ')}`,
    );
    console.log(`  the tail: ${step.tail}`);
    if (step.waits) console.log(`  the services' metrics: ${step.waits}`);
    if (step.profile) console.log(step.profile);
    if (!step.met) break;
  }
  return steps;
}

const serviceWarnings = (system: System) => [
  ...warnings(system.log('recorder')),
  ...warnings(system.log('dispatcher')),
];

/** The machine's busy share, and how much of it was outside the processes measured. */
const busyCell = (step: Step) =>
  `${(step.busyShare * 100).toFixed(0)} % (${(step.otherShare * 100).toFixed(0)} % other)`;

const carriedRate = (steps: Step[]) => steps.filter((s) => s.met).at(-1)?.rate ?? 0;

function report(runs: Run[], loadBefore: number[]): void {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\nmachine: ${os.cpus().length} × ${os.cpus()[0]?.model}, node ${process.version}; load average before ${load(loadBefore)}, after ${load(os.loadavg())}`,
  );
  for (const { pipeline, steps } of runs) {
    const names = Object.keys(steps[0]?.cpuPerEvent ?? {});
    console.log(`\n${pipeline}:\n`);
    console.log(
      table(
        [
          'events/s',
          'p50 / p99 / max ms',
          'drained',
          'busy',
          'API p99',
          ...names.map((n) => `${n} µs/ev`),
          'verdict',
        ],
        steps.map((s) => [
          String(s.rate),
          `${fmt.ms(s.p50)} / ${fmt.ms(s.p99)} / ${fmt.ms(s.max)}`,
          Number.isFinite(s.drainSeconds) ? `${s.drainSeconds.toFixed(1)} s` : '—',
          busyCell(s),
          `${fmt.ms(s.api.p99)} ms`,
          ...names.map((n) => s.cpuPerEvent[n]!.toFixed(0)),
          s.met ? 'MET' : 'MISS',
        ]),
      ),
    );
  }
  const carried = runs.map(({ pipeline, steps }) => `${pipeline} ${carriedRate(steps)}`).join(', ');
  const ours = runs.find((r) => r.pipeline === 'ours');
  console.log(
    `\ncapacity, events a second with p99 ≤ ${TARGET_P99_MS} ms and drained ≤ ${TARGET_DRAIN_SECONDS} s: ${carried}` +
      (ours ? ` (target ${TARGET_RATE}: ${carriedRate(ours.steps) >= TARGET_RATE ? 'MET' : 'MISS'})` : ''),
  );
  for (const { pipeline, warnings: found } of runs) {
    console.log(`warnings in the ${pipeline} pipeline's logs: ${found.length}`);
    for (const line of found.slice(0, 5)) console.log(`  ${line.slice(0, 300)}`);
  }
}

await runBench(main);
