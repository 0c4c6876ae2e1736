// `pnpm bench:soak` (issues 7 and 43): the whole system (test/bench/system.ts) under combined load
// for SOAK_DURATION (60m; SOAK_MINUTES=N still works): trips written one per transaction at
// SOAK_EVENTS_PER_SECOND (300), each an event delivered as a signed webhook to a local HTTPS
// receiver, and the read API paced at SOAK_API_RATE (300) requests a second beside it. Before the
// soak, the API's maximum is measured alone and while the events flow, in alternating rounds; first
// with the bare pipeline (pipeline-bare.ts) carrying the events, the floor of that ratio on this
// machine (SOAK_FLOOR=0 skips it), then with ours.
// Targets:
//   - memory: each service's V8 heap in use grows ≤ 5 % and its RSS ≤ 15 % after the warm-up
//     (SOAK_WARMUP_MINUTES, 10), read every 5 s, each minute's heap floor and RSS peak kept, and
//     the growth read from a line fitted through the minutes, not from two points. The warm-up is
//     V8 sizing its heap, which a leak's line would not stop at: the services' start flags fix
//     the young generation, but the old generation grows until its first mark-compact sets its
//     limit, and RSS keeps those pages. At this load the first comes within
//     ten minutes (docs/benchmarks/soak.md, the hour run of 2026-11-28), so from minute 10 the
//     line sees the cycle's repeats, not its first climb;
//   - the API's maximum while events flow ≥ 0.8 × without;
//   - the queues drained ≤ 10 s after the load stops.
// Each minute prints the API's pace, the delivery rate and latency, and each service's heap and RSS.
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { cpuBetween, sampleCpu, warnings } from './dispatcher-procs.ts';
import { cleanedUpAfter, fmt, median, percentile, runBench, table } from './lib.ts';
import { breakdown, memoryWatch, type MemoryReading, type MinuteMemory } from './soak-memory.ts';
import {
  apiMaximum,
  fittedGrowth,
  machineBusySeconds,
  now,
  startSystem,
  within,
  type Service,
  type System,
} from './system.ts';
import { writeTrips } from './host-writer.ts';

const MINUTES = durationMinutes(
  process.env.SOAK_DURATION ?? (process.env.SOAK_MINUTES ? `${process.env.SOAK_MINUTES}m` : '60m'),
);
const EVENTS_PER_SECOND = Number(process.env.SOAK_EVENTS_PER_SECOND ?? 300);
const API_RATE = Number(process.env.SOAK_API_RATE ?? 300);
const WARMUP_MINUTES = Math.min(Number(process.env.SOAK_WARMUP_MINUTES ?? 10), Math.max(0, MINUTES - 2));
const TARGET_HEAP_GROWTH = 0.05;
const TARGET_RSS_GROWTH = 0.15;
const TARGET_API_RATIO = 0.8;
const TARGET_DRAIN_SECONDS = 10;
/** How long to wait for the drain before calling it a miss: bounded, but long enough to see the figure. */
const DRAIN_LIMIT_SECONDS = 120;
/** The API's maximum: rounds of this many seconds, the median taken. */
const MAX_ROUNDS = 3;
const MAX_ROUND_SECONDS = 5;
/** The API's ratio is measured beside the bare pipeline first (SOAK_FLOOR=0: not). */
const FLOOR = process.env.SOAK_FLOOR !== '0';
/** Events flow this long before the API's maximum is measured beside them. */
const EVENTS_WARMUP_SECONDS = 10;
/** After a round beside the events, the pipeline drains what was in flight before the next alone. */
const SETTLE_SECONDS = 3;
/** A minute of API load that has not ended after this long means the machine cannot keep the pace. */
const MINUTE_LIMIT_MS = 180_000;
/** How often each service's memory is read within a minute (see memoryWatch). */
const MEMORY_EVERY_MS = 5_000;

/**
 * SOAK_HEAP_SNAPSHOTS=3,15: after those minutes the API and the dispatcher each write a V8 heap
 * snapshot (node's --heapsnapshot-signal, set for this bench only) into SOAK_SNAPSHOT_DIR, for
 * test/bench/heap-compare.ts to compare. Writing one pauses the service for seconds and grows its
 * RSS, so a run that takes them is for the snapshots, not for the memory figures.
 */
const SNAPSHOT_MINUTES = (process.env.SOAK_HEAP_SNAPSHOTS ?? '').split(',').filter(Boolean).map(Number);
const SNAPSHOT_DIR = process.env.SOAK_SNAPSHOT_DIR ?? join(os.tmpdir(), 'soak-heap');

function heapSnapshots(system: System): void {
  for (const name of ['api', 'dispatcher'] as const) process.kill(system.pids[name], 'SIGUSR2');
  console.log(`  heap snapshots of the API and the dispatcher asked for, into ${SNAPSHOT_DIR}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISS');
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;

function durationMinutes(text: string): number {
  const match = /^(\d+)(m|h)$/.exec(text.trim());
  if (!match)
    throw new Error(`SOAK_DURATION: a whole number of minutes or hours, like 60m or 1h (got '${text}')`);
  const minutes = Number(match[1]) * (match[2] === 'h' ? 60 : 1);
  if (minutes < 1) throw new Error('SOAK_DURATION must be at least 1m');
  return minutes;
}

interface ApiFigures {
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  failures: number;
}

interface Sample {
  at: number;
  written: number;
  delivered: number;
  busy: number;
  memory: Record<Service, MinuteMemory>;
}

async function sample(
  system: System,
  written: number,
  memory: Record<Service, MinuteMemory>,
): Promise<Sample> {
  return { at: now(), written, delivered: await system.delivered(), busy: machineBusySeconds(), memory };
}

/** One reading as a minute's: its floor and peak are the reading itself. */
const asMinute = (readings: Record<Service, MemoryReading>) =>
  Object.fromEntries(
    Object.entries(readings).map(([n, r]) => [n, { heapFloor: r.heapUsed, rssPeak: r.rss, atPeak: r }]),
  ) as Record<Service, MinuteMemory>;

/** The soak itself: a paced minute of API load after another, a sample after each. */
async function soak(system: System, writer: ReturnType<typeof writeTrips>) {
  const done = system.load.next<ApiFigures>((m) => m.done === true);
  done.catch(() => {}); // awaited below; this only keeps an early crash from being unhandled
  const cpuStart = sampleCpu(system.cpuGroups);
  const samples = [await sample(system, writer.committed.size, asMinute(await system.memory()))];
  const memory = memoryWatch(() => system.memory(), MEMORY_EVERY_MS);
  system.load.process.send({
    op: 'run',
    url: system.api.url,
    headers: system.headers,
    paths: system.readPaths,
    rate: API_RATE,
    minutes: MINUTES,
  });
  const arrived = new Map<string, number>();
  let collecting = true;
  let latencies: number[] = [];
  const collector = (async () => {
    while (collecting) {
      for (const [id, at] of await system.arrivals()) {
        if (arrived.has(id)) continue;
        arrived.set(id, at);
        const committedAt = writer.committed.get(id);
        if (committedAt !== undefined) latencies.push(at - committedAt);
      }
      await sleep(1_000);
    }
  })();
  for (let minute = 1; minute <= MINUTES; minute++) {
    const paced = await within(
      system.load.next<ApiFigures>((m) => m.minute === minute),
      MINUTE_LIMIT_MS,
      `minute ${minute} of API load did not end within ${MINUTE_LIMIT_MS / 1000} s`,
    );
    const s = await sample(system, writer.committed.size, memory.take());
    const prev = samples.at(-1)!;
    samples.push(s);
    const e2e = latencies.sort((a, b) => a - b);
    latencies = [];
    const seconds = (s.at - prev.at) / 1000;
    console.log(
      `minute ${String(minute).padStart(2)}: API ${fmt.rps(paced.rps)} req/s p99 ${fmt.ms(paced.p99)} ms` +
        `${paced.failures ? ` (${paced.failures} failed)` : ''}; written ${fmt.rps((s.written - prev.written) / seconds)}/s, ` +
        `delivered ${fmt.rps((s.delivered - prev.delivered) / seconds)}/s, commit → received p99 ${fmt.ms(percentile(e2e, 99))} ms; ` +
        `heap floor ${Object.entries(s.memory)
          .map(([n, m]) => `${n} ${mb(m.heapFloor)}`)
          .join(', ')}; ` +
        `RSS peak ${Object.entries(s.memory)
          .map(([n, m]) => `${n} ${mb(m.rssPeak)}`)
          .join(', ')}; ` +
        `machine busy ${Math.round(((s.busy - prev.busy) / seconds / os.cpus().length) * 100)} %`,
    );
    for (const [n, m] of Object.entries(s.memory))
      console.log(`  ${n} at its RSS peak, MB: ${breakdown(m.atPeak)}`);
    if (SNAPSHOT_MINUTES.includes(minute)) heapSnapshots(system);
  }
  const api = await done;
  const cpu = cpuBetween(cpuStart, sampleCpu(system.cpuGroups));
  collecting = false;
  await Promise.all([collector, memory.stop()]);
  return { samples, api, cpu, arrived };
}

/** Seconds until every queue is empty and every trip written received; Infinity past the limit. */
async function drain(system: System, writer: ReturnType<typeof writeTrips>, arrived: Map<string, number>) {
  await writer.stop();
  const stoppedAt = now();
  let atStop: Record<string, number> | undefined;
  while (now() - stoppedAt < DRAIN_LIMIT_SECONDS * 1000) {
    for (const [id, at] of await system.arrivals()) if (!arrived.has(id)) arrived.set(id, at);
    const left = await system.backlog();
    left['not yet received'] = [...writer.committed.keys()].filter((id) => !arrived.has(id)).length;
    atStop ??= left;
    if (Object.values(left).every((n) => n === 0)) return { seconds: (now() - stoppedAt) / 1000, atStop };
    await sleep(250);
  }
  return { seconds: Infinity, atStop: atStop! };
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg();
  const serviceEnv: Record<string, string> = {};
  if (SNAPSHOT_MINUTES.length) {
    mkdirSync(SNAPSHOT_DIR, { recursive: true });
    serviceEnv.NODE_OPTIONS = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${SNAPSHOT_DIR}`;
  }
  // The floor in a system of its own, stopped before ours starts.
  const floor = FLOOR
    ? await cleanedUpAfter(async () =>
        apiMaxima(await startSystem({}, { pipeline: 'bare' }), 'the bare pipeline'),
      )
    : undefined;
  const system = await startSystem(serviceEnv);
  const { alone, beside } = await apiMaxima(system, 'ours');
  const writer = writeTrips(system.writer, system.agencyId, EVENTS_PER_SECOND, 'trp_soak');
  console.log(
    `soak: ${MINUTES} min; API at ${API_RATE} req/s paced; ${EVENTS_PER_SECOND} trips/s written; memory read from minute ${WARMUP_MINUTES}\n`,
  );
  const { samples, api, cpu, arrived } = await soak(system, writer);
  // A drain that fails (the broker gone) still leaves the soak's figures to report.
  const drained = await drain(system, writer, arrived).catch((error: Error) => ({
    seconds: NaN,
    atStop: {} as Record<string, number>,
    error: error.message.slice(0, 120),
  }));
  const start = samples[0]!;
  const end = samples.at(-1)!;
  const e2e = [...writer.committed]
    .filter(([, at]) => at >= start.at && at <= end.at)
    .map(([id, at]) => (arrived.get(id) ?? Infinity) - at)
    .sort((a, b) => a - b);
  report({ system, samples, api, cpu, drained, e2e, alone, beside, floor, loadBefore });
  console.log(`${writer.failures} failed writes${writer.firstFailure ? ` (${writer.firstFailure})` : ''}`);
}

/**
 * The API's maximum alone and with the events flowing through `system`'s pipeline, in alternating
 * rounds (alone, then beside, MAX_ROUNDS times): the machine's speed drifts from one minute to the
 * next, and alternation lets the drift hit both alike. Prints every round; answers the medians.
 */
async function apiMaxima(system: System, pipeline: string) {
  const alone: number[] = [];
  const beside: number[] = [];
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    alone.push((await apiMaximum(system, 1, MAX_ROUND_SECONDS)).max);
    const prefix = `trp_max${round}_`;
    const writer = writeTrips(system.writer, system.agencyId, EVENTS_PER_SECOND, prefix, system.tripsTable);
    await sleep(EVENTS_WARMUP_SECONDS * 1000);
    beside.push((await apiMaximum(system, 1, MAX_ROUND_SECONDS)).max);
    await writer.stop();
    await sleep(SETTLE_SECONDS * 1000);
  }
  console.log(
    `API maximum (20 connections, ${MAX_ROUNDS} rounds of ${MAX_ROUND_SECONDS} s each way, alternating): alone ${alone.map(fmt.rps).join(', ')} req/s; ` +
      `with ${EVENTS_PER_SECOND} events/s flowing through ${pipeline} ${beside.map(fmt.rps).join(', ')} req/s`,
  );
  return { alone: median(alone), beside: median(beside) };
}

function report(r: {
  system: System;
  samples: Sample[];
  api: ApiFigures;
  cpu: Record<string, number>;
  drained: { seconds: number; atStop: Record<string, number>; error?: string };
  e2e: number[];
  alone: number;
  beside: number;
  floor?: { alone: number; beside: number };
  loadBefore: number[];
}): void {
  const after = r.samples.slice(WARMUP_MINUTES);
  const services = Object.keys(r.samples[0]!.memory) as Service[];
  const memoryRows = services.flatMap((name) => {
    const heap = fittedGrowth(after.map((s) => s.memory[name].heapFloor));
    const rss = fittedGrowth(after.map((s) => s.memory[name].rssPeak));
    return [
      [
        `${name}: V8 heap in use (each minute's floor), fitted over minutes ${WARMUP_MINUTES}–${MINUTES}`,
        pct(heap),
        `≤ ${TARGET_HEAP_GROWTH * 100} %: ${verdict(heap <= TARGET_HEAP_GROWTH)}`,
      ],
      [
        `${name}: RSS (each minute's peak), fitted over minutes ${WARMUP_MINUTES}–${MINUTES}`,
        pct(rss),
        `≤ ${TARGET_RSS_GROWTH * 100} %: ${verdict(rss <= TARGET_RSS_GROWTH)}`,
      ],
    ];
  });
  const ratio = r.beside / r.alone;
  const soakSeconds = (r.samples.at(-1)!.at - r.samples[0]!.at) / 1000;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `\nmachine: ${os.cpus().length} × ${os.cpus()[0]?.model}, node ${process.version}; load average before ${load(r.loadBefore)}, after ${load(os.loadavg())}\n`,
  );
  console.log(
    table(
      ['measurement', 'figure', 'target'],
      [
        [
          'API maximum with events flowing / alone',
          `${fmt.rps(r.beside)} / ${fmt.rps(r.alone)} req/s = ${fmt.ratio(ratio)}`,
          `≥ ${TARGET_API_RATIO}: ${verdict(ratio >= TARGET_API_RATIO)}`,
        ],
        ...(r.floor
          ? [
              [
                'the floor: the same with the bare pipeline carrying the events',
                `${fmt.rps(r.floor.beside)} / ${fmt.rps(r.floor.alone)} req/s = ${fmt.ratio(r.floor.beside / r.floor.alone)}`,
                'for reference',
              ],
            ]
          : []),
        [
          `API paced at ${API_RATE} req/s`,
          `${fmt.rps(r.api.rps)} req/s; p99 ${fmt.ms(r.api.p99)} ms`,
          'for reference',
        ],
        [
          'commit → webhook received',
          `p50 ${fmt.ms(percentile(r.e2e, 50))} / p99 ${fmt.ms(percentile(r.e2e, 99))} ms`,
          'for reference',
        ],
        ...memoryRows,
        [
          'queues drained after the load stopped',
          r.drained.error
            ? `failed: ${r.drained.error}`
            : Number.isFinite(r.drained.seconds)
              ? `${r.drained.seconds.toFixed(1)} s`
              : `not within ${DRAIN_LIMIT_SECONDS} s`,
          `≤ ${TARGET_DRAIN_SECONDS} s: ${verdict(r.drained.seconds <= TARGET_DRAIN_SECONDS)}`,
        ],
      ],
    ),
  );
  const perMinute = (pick: (m: MinuteMemory) => number) =>
    services
      .map((n) => {
        const fitted = pct(fittedGrowth(after.map((s) => pick(s.memory[n]))));
        return `${n} ${r.samples.map((s) => (pick(s.memory[n]) / 2 ** 20).toFixed(0)).join(' ')} (fitted ${fitted})`;
      })
      .join('; ');
  console.log(
    `\nV8 heap in use, each minute's floor (MB, minutes 0–${MINUTES}): ${perMinute((m) => m.heapFloor)}`,
  );
  console.log(`RSS, each minute's peak (MB): ${perMinute((m) => m.rssPeak)}`);
  console.log(`heapTotal at that peak (MB): ${perMinute((m) => m.atPeak.heapTotal)}`);
  console.log(`RSS − heapTotal at that peak (MB): ${perMinute((m) => m.atPeak.rss - m.atPeak.heapTotal)}`);
  console.log(`external at that peak (MB): ${perMinute((m) => m.atPeak.external)}`);
  console.log(
    `backlog when the load stopped: ${Object.entries(r.drained.atStop)
      .map(([n, c]) => `${n} ${c}`)
      .join(', ')}`,
  );
  const cores = (seconds: number) => (seconds / soakSeconds).toFixed(2);
  console.log(
    `CPU during the soak, in cores: ${Object.entries(r.cpu)
      .map(([n, s]) => `${n} ${cores(s)}`)
      .join(', ')}`,
  );
  const serviceWarnings = [...warnings(r.system.log('recorder')), ...warnings(r.system.log('dispatcher'))];
  console.log(`warnings in the recorder's and dispatcher's logs: ${serviceWarnings.length}`);
  for (const line of serviceWarnings.slice(0, 5)) console.log(`  ${line.slice(0, 300)}`);
}

await runBench(main);
