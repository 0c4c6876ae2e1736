// `pnpm bench:soak` (issue 7, item 3): the whole system under combined load for SOAK_MINUTES (10):
// trips written to Postgres at SOAK_EVENTS_PER_SECOND (500) as the host application writes them,
// each one an event the recorder records and publishes and the dispatcher delivers as a signed
// webhook to a local HTTPS receiver, and the read API paced at half its maximum, measured first
// while those events flow (on two shared cores, half of the API's maximum alone does not fit).
// Prints throughput, latencies, each service's memory (RSS) at minute 2 and at the end (growth
// ≤ 15 %), and how long the queues take to drain once the load stops (≤ 30 s). The API, the
// recorder, the dispatcher, the receiver and the API load each run as their own Node process; this
// one writes the trips and keeps the books. Results: docs/benchmarks.md, "Soak".
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { queueNames, topology } from '@trips/broker';
import { createDb } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
} from '@trips/testkit';
import {
  cpuBetween,
  pidsMatching,
  sampleCpu,
  startChild as startProcess,
  waitReady,
  warnings,
} from './dispatcher-procs.ts';
import {
  runBench,
  fmt,
  freePort,
  median,
  onCleanup,
  percentile,
  saturate,
  startChild as startServer,
  table,
} from './lib.ts';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const EVENTS_PER_SECOND = Number(process.env.SOAK_EVENTS_PER_SECOND ?? 500);
/** Set to skip measuring the API's maximum (for trying the rest quickly). */
const API_RATE = process.env.SOAK_API_RATE ? Number(process.env.SOAK_API_RATE) : undefined;
/** Memory is compared between this minute and the last (minute 2 of 10; earlier in short runs). */
const BASELINE_MINUTE = Math.max(0, Math.min(2, MINUTES - 1));
const TARGET_GROWTH = 0.15;
const TARGET_DRAIN_SECONDS = 30;
/** How long to wait for the drain before calling it a miss: bounded, but long enough to see the figure. */
const DRAIN_LIMIT_SECONDS = 120;
/** Trips the API reads, in turn. */
const READ_TRIPS = 1_000;
/** The API's maximum is measured as bench:api does: 20 connections, median of short rounds. */
const MAX_CONNECTIONS = 20;
const MAX_ROUNDS = 3;
const MAX_ROUND_SECONDS = 5;
const MAX_WARMUP_SECONDS = 3;
/** Events flow this long before the API's maximum is measured, so the pipeline is at its pace. */
const EVENTS_WARMUP_SECONDS = 10;
/** A minute of API load that has not ended after this long means the machine cannot keep the pace. */
const MINUTE_LIMIT_MS = 180_000;
/** Connections the host application's writes share. */
const WRITER_CONNECTIONS = 4;

if (!Number.isInteger(MINUTES) || MINUTES < 1) throw new Error('SOAK_MINUTES must be a whole number ≥ 1');

const API = fileURLToPath(new URL('../../services/api/src/main.ts', import.meta.url));
const RECORDER = fileURLToPath(new URL('../../services/recorder/src/main.ts', import.meta.url));
const DISPATCHER = fileURLToPath(new URL('../../services/dispatcher/src/main.ts', import.meta.url));
const RECEIVER = fileURLToPath(new URL('./dispatcher-receiver.ts', import.meta.url));
const API_LOAD = fileURLToPath(new URL('./soak-api-load.ts', import.meta.url));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Epoch ms, sub-millisecond: the receiver stamps arrivals on the same clock. */
const now = () => performance.timeOrigin + performance.now();
const verdict = (ok: boolean) => (ok ? 'MET' : 'MISS');
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;

/** `promise`, or an error with `message` once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** CPU seconds the whole machine has spent busy (not idle, not waiting on I/O), from /proc/stat. */
function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100; // USER_HZ
}

/**
 * A service's V8 heap in use, from its Prometheus metrics (prom-client's default
 * nodejs_heap_size_used_bytes), in bytes: beside RSS, it tells a heap that grows from one that
 * holds on to memory it no longer uses. NaN when the metrics cannot be read.
 */
async function heapUsed(port: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return Number(/^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/** Resident memory of a process, from /proc (VmRSS), in bytes. */
function rss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (!kb) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

interface ApiFigures {
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  failures: number;
}

/**
 * The host application's writes: one trip per INSERT, each its own transaction, started on an even
 * schedule of `rate` a second whether or not earlier ones have answered. Each makes one
 * trip.created event. `committed` notes when each INSERT answered (just after its commit).
 */
function writeTrips(db: ReturnType<typeof createDb>, agencyId: string, rate: number) {
  const committed = new Map<string, number>();
  const inFlight = new Set<Promise<unknown>>();
  let started = 0;
  let failures = 0;
  let firstFailure = '';
  let running = true;
  const begin = performance.now();
  const loop = (async () => {
    while (running) {
      for (const due = ((performance.now() - begin) / 1000) * rate; started < due; started++) {
        const id = `trp_soak${started}`;
        const write = db
          .insertInto('trips')
          .values({ id, agency_id: agencyId, title: `Soak ${started}`, num_days: 3 })
          .execute()
          .then(
            () => void committed.set(id, now()),
            (error: Error) => {
              failures++;
              firstFailure ||= error.message;
            },
          )
          .finally(() => inFlight.delete(write));
        inFlight.add(write);
      }
      await sleep(1);
    }
    await Promise.all(inFlight);
  })();
  return {
    committed,
    get failures() {
      return failures;
    },
    get firstFailure() {
      return firstFailure;
    },
    /** Starts no more writes and waits for those in flight. */
    async stop() {
      running = false;
      await loop;
    },
  };
}

async function main() {
  const loadBefore = os.loadavg();
  const ca = await createTestCa();
  const t = await createTestDatabase();
  onCleanup(() => t.drop());
  const prefix = randomAmqpPrefix();
  // The dispatcher's queues with its default delays, as it runs here.
  const names = topology(prefix, readConfig({}).policy.queueDelaysMs);
  const queues = queueNames(names);
  onCleanup(() => deleteAmqpObjects({ queues, exchanges: [names.eventsExchange, names.expressExchange] }));

  const receiver = startProcess(
    'receiver',
    RECEIVER,
    { BENCH_TLS_KEY: ca.key, BENCH_TLS_CERT: ca.cert },
    true,
  );
  onCleanup(() => receiver.stop());
  const { port } = await receiver.next<{ port: number }>((m) => m.ready === true);
  // The receiver notes the arrival time of every delivery to a path starting with /e2e.
  const path = '/e2e/soak';
  const delivered = async () =>
    (await receiver.request<{ counts: Record<string, number> }>({ op: 'snapshot' })).counts[path] ?? 0;

  const { id: agencyId } = await createAgency(t.db, {
    name: 'Soak Golf Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const { key } = await createApiKey(t.db, { agencyId, scopes: ['trips:read'] });
  await createWebhook(t.db, {
    agencyId,
    url: `https://127.0.0.1:${port}${path}`,
    eventTypes: ['trip.created'],
  });
  const readIds = (
    await t.db
      .insertInto('trips')
      .values(
        Array.from({ length: READ_TRIPS }, (_, i) => ({
          agency_id: agencyId,
          title: `Read ${i}`,
          region: 'Algarve',
          num_days: 7,
          golfers: 4 + (i % 8),
        })),
      )
      .returning('id')
      .execute()
  ).map((row) => row.id);

  // The dispatcher first: it declares the queues, so no event the recorder publishes goes unrouted.
  const serviceEnv = { DATABASE_URL: t.url, AMQP_URL: amqpUrl, AMQP_PREFIX: prefix, LOG_LEVEL: 'info' };
  const service = async (
    name: string,
    script: string,
    healthVariable: string,
    env: Record<string, string>,
  ) => {
    const healthPort = await freePort();
    const child = startProcess(name, script, { ...serviceEnv, [healthVariable]: String(healthPort), ...env });
    onCleanup(() => child.stop());
    await waitReady(child, `http://127.0.0.1:${healthPort}/readyz`);
    return Object.assign(child, { metricsPort: healthPort });
  };
  const dispatcher = await service('dispatcher', DISPATCHER, 'DISPATCHER_HEALTH_PORT', {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_CA_FILE: ca.caFile,
  });
  const recorder = await service('recorder', RECORDER, 'RECORDER_HEALTH_PORT', {});
  // As bench:api runs it: the limiter works on every request but never refuses.
  const apiMetricsPort = await freePort();
  const api = await startServer(
    'soak-api',
    API,
    {
      ...serviceEnv,
      RATE_LIMIT_PER_SECOND: '1000000000',
      RATE_LIMIT_BURST: '1000000000',
      API_METRICS_PORT: String(apiMetricsPort),
    },
    '/healthz',
  );
  onCleanup(() => api.stop());
  const pids = { api: api.pid, recorder: recorder.process.pid!, dispatcher: dispatcher.process.pid! };
  const metricsPorts: Record<string, number> = {
    api: apiMetricsPort,
    recorder: recorder.metricsPort,
    dispatcher: dispatcher.metricsPort,
  };

  // The seeded trips' events go through first, so they are not part of any figure.
  for (const deadline = Date.now() + 60_000; (await delivered()) < READ_TRIPS; await sleep(200)) {
    if (Date.now() > deadline) throw new Error('the seeded trips were not all delivered within 60 s');
  }
  await receiver.request({ op: 'arrivals' });

  const load = startProcess('api-load', API_LOAD, {}, true);
  onCleanup(() => load.stop());
  await load.next((m) => m.ready === true);
  const conn = await amqplib.connect(amqpUrl);
  onCleanup(() => conn.close().catch(() => {}));
  const writerDb = createDb(t.url, { max: WRITER_CONNECTIONS, applicationName: 'soak-writer' });
  onCleanup(() => writerDb.destroy());
  const countRows = async (table: 'events' | 'outbox' | 'events_unpublished') =>
    (
      await t.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  // ---- Events from now on; the API's maximum while they flow ----
  const writer = writeTrips(writerDb, agencyId, EVENTS_PER_SECOND);
  await sleep(EVENTS_WARMUP_SECONDS * 1000);
  const headers = { authorization: `Bearer ${key}` };
  const paths = readIds.map((id) => `/api/v1/trips/${id}`);
  let rate = API_RATE;
  if (rate === undefined) {
    let next = 0;
    const round = async (seconds: number) => {
      const result = await saturate({
        url: api.url,
        seconds,
        connections: MAX_CONNECTIONS,
        headers,
        nextPath: () => paths[next++ % paths.length]!,
      });
      if (result.failures > 0) throw new Error(`API maximum: ${result.failures} failed requests`);
      return result.rps;
    };
    await round(MAX_WARMUP_SECONDS);
    const before = { at: now(), delivered: await delivered() };
    const rounds: number[] = [];
    for (let i = 0; i < MAX_ROUNDS; i++) rounds.push(await round(MAX_ROUND_SECONDS));
    const deliveredMeanwhile = ((await delivered()) - before.delivered) / ((now() - before.at) / 1000);
    const max = median(rounds);
    rate = Math.floor(max / 2);
    console.log(
      `API maximum with the events flowing (${MAX_CONNECTIONS} connections, ${MAX_ROUNDS} rounds of ` +
        `${MAX_ROUND_SECONDS} s): ${rounds.map(fmt.rps).join(', ')} req/s, median ${fmt.rps(max)}; ` +
        `meanwhile ${fmt.rps(deliveredMeanwhile)} deliveries/s → soak at ${rate} req/s`,
    );
  }
  console.log(
    `soak: ${MINUTES} min; API GET /trips/{id} at ${rate} req/s paced; ${EVENTS_PER_SECOND} trips/s written ` +
      `(one trip.created event each) over ${WRITER_CONNECTIONS} connections; memory compared between minute ` +
      `${BASELINE_MINUTE} and ${MINUTES}\n`,
  );

  // ---- The soak ----
  const cpuGroups = {
    api: () => [pids.api],
    recorder: () => [pids.recorder],
    dispatcher: () => [pids.dispatcher],
    receiver: () => [receiver.process.pid!],
    'API load': () => [load.process.pid!],
    'bench (writer)': () => [process.pid],
    postgres: () => pidsMatching(t.name),
    rabbitmq: () => pidsMatching('beam.smp'),
  };
  const sample = async () => ({
    at: now(),
    written: writer.committed.size,
    events: await countRows('events'),
    delivered: await delivered(),
    rss: Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rss(pid)])),
    heap: Object.fromEntries(
      await Promise.all(Object.keys(pids).map(async (name) => [name, await heapUsed(metricsPorts[name]!)])),
    ) as Record<string, number>,
    busy: machineBusySeconds(),
  });
  type Sample = Awaited<ReturnType<typeof sample>>;
  const done = load.next<ApiFigures>((m) => m.done === true);
  done.catch(() => {}); // awaited below; this only keeps an early crash from being unhandled
  const cpuStart = sampleCpu(cpuGroups);
  const start = await sample();
  load.process.send({ op: 'run', url: api.url, headers, paths, rate, minutes: MINUTES });

  // Arrivals at the receiver, collected every second: trip id → when it arrived.
  const arrived = new Map<string, number>();
  let collecting = true;
  const collect = async () => {
    const { arrivals } = await receiver.request<{ arrivals: [string, number][] }>({ op: 'arrivals' });
    const fresh: number[] = [];
    for (const [id, at] of arrivals) {
      if (arrived.has(id)) continue;
      arrived.set(id, at);
      const committedAt = writer.committed.get(id);
      if (committedAt !== undefined) fresh.push(at - committedAt);
    }
    return fresh;
  };
  let latenciesThisMinute: number[] = [];
  const collector = (async () => {
    while (collecting) {
      latenciesThisMinute.push(...(await collect()));
      await sleep(1_000);
    }
  })();

  const samples: Sample[] = [start];
  for (let minute = 1; minute <= MINUTES; minute++) {
    const paced = await within(
      load.next<ApiFigures>((m) => m.minute === minute),
      MINUTE_LIMIT_MS,
      `minute ${minute} of API load did not end within ${MINUTE_LIMIT_MS / 1000} s`,
    );
    const s = await sample();
    const prev = samples.at(-1)!;
    samples.push(s);
    const seconds = (s.at - prev.at) / 1000;
    const perSecond = (n: number) => `${fmt.rps(n / seconds)}/s`;
    const e2e = latenciesThisMinute.sort((a, b) => a - b);
    latenciesThisMinute = [];
    console.log(
      `minute ${String(minute).padStart(2)}: API ${fmt.rps(paced.rps)} req/s p99 ${fmt.ms(paced.p99)} ms` +
        `${paced.failures ? ` (${paced.failures} failed)` : ''}; written ${perSecond(s.written - prev.written)}, ` +
        `recorded ${perSecond(s.events - prev.events)}, delivered ${perSecond(s.delivered - prev.delivered)}, ` +
        `commit → received p99 ${fmt.ms(percentile(e2e, 99))} ms; RSS ` +
        `${Object.keys(pids)
          .map((name) => `${name} ${mb(s.rss[name]!)}`)
          .join(
            ', ',
          )}; machine busy ${Math.round(((s.busy - prev.busy) / seconds / os.cpus().length) * 100)} %`,
    );
  }
  const apiTotal = await done;
  const end = samples.at(-1)!;
  const cpu = cpuBetween(cpuStart, sampleCpu(cpuGroups));
  await writer.stop();
  const stoppedAt = now();
  const soakSeconds = (end.at - start.at) / 1000;

  // ---- Drain: every queue empty and every trip written received ----
  const backlog = async () => {
    const ch = await conn.createChannel();
    const counts: Record<string, number> = {
      outbox: await countRows('outbox'),
      unpublished: await countRows('events_unpublished'),
    };
    for (const queue of queues)
      counts[queue.slice(prefix.length)] = (await ch.checkQueue(queue)).messageCount;
    await ch.close();
    await collect();
    counts['not yet received'] = [...writer.committed.keys()].filter((id) => !arrived.has(id)).length;
    return counts;
  };
  collecting = false;
  await collector;
  const atStop = await backlog();
  let drainSeconds = Infinity;
  for (let left = atStop; ; left = await backlog()) {
    if (Object.values(left).every((n) => n === 0)) {
      drainSeconds = (now() - stoppedAt) / 1000;
      break;
    }
    if (now() - stoppedAt > DRAIN_LIMIT_SECONDS * 1000) break;
    await sleep(250);
  }

  // Trips committed during the soak; one whose event never arrived counts as infinitely late.
  const e2e = [...writer.committed]
    .filter(([, at]) => at >= start.at && at <= end.at)
    .map(([id, at]) => (arrived.get(id) ?? Infinity) - at)
    .sort((a, b) => a - b);
  const at = (p: number) => fmt.ms(percentile(e2e, p));
  const perSecond = (n: number) => `${fmt.rps(n / soakSeconds)}/s`;
  const baseline = samples[BASELINE_MINUTE]!;
  const memoryRows = Object.keys(pids).map((name) => {
    const growth = end.rss[name]! / baseline.rss[name]! - 1;
    return [
      `memory (RSS) of the ${name}, minute ${BASELINE_MINUTE} → ${MINUTES}`,
      `${mb(baseline.rss[name]!)} → ${mb(end.rss[name]!)} (${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %)`,
      `≤ ${TARGET_GROWTH * 100} %: ${verdict(growth <= TARGET_GROWTH)}`,
    ];
  });
  const serviceWarnings = [...warnings(recorder.log()), ...warnings(dispatcher.log())];

  console.log(
    `\nmachine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
  );
  const loadavg = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`load average before ${loadavg(loadBefore)}, after ${loadavg(os.loadavg())}\n`);
  console.log(
    table(
      ['measurement', 'figure', 'target'],
      [
        [
          `API: GET /trips/{id} paced at ${rate} req/s`,
          `${fmt.rps(apiTotal.rps)} req/s; p50 ${fmt.ms(apiTotal.p50)} / p95 ${fmt.ms(apiTotal.p95)} / p99 ${fmt.ms(apiTotal.p99)} ms`,
          'half the maximum',
        ],
        [
          'events written (one trip INSERT per transaction)',
          perSecond(end.written - start.written),
          `${EVENTS_PER_SECOND}/s`,
        ],
        ['events recorded (GET /events)', perSecond(end.events - start.events), ''],
        ['webhook deliveries received', perSecond(end.delivered - start.delivered), ''],
        ['commit → webhook received', `p50 ${at(50)} / p95 ${at(95)} / p99 ${at(99)} ms`, 'for reference'],
        ...memoryRows,
        [
          'queues drained after the load stopped',
          Number.isFinite(drainSeconds)
            ? `${drainSeconds.toFixed(1)} s`
            : `not within ${DRAIN_LIMIT_SECONDS} s`,
          `≤ ${TARGET_DRAIN_SECONDS} s: ${verdict(drainSeconds <= TARGET_DRAIN_SECONDS)}`,
        ],
      ],
    ),
  );
  console.log(
    `\nsoak ${soakSeconds.toFixed(1)} s: ${end.written - start.written} trips written, ${writer.failures} failed ` +
      `writes${writer.firstFailure ? ` (${writer.firstFailure})` : ''}; ${apiTotal.failures} failed API requests; ` +
      `max commit → received ${at(100)} ms, ${e2e.filter((l) => l === Infinity).length} never arrived`,
  );
  console.log(
    `backlog when the load stopped: ${Object.entries(atStop)
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')}`,
  );
  console.log(
    `RSS per minute (MB, minutes 0–${MINUTES}): ${Object.keys(pids)
      .map((name) => `${name} ${samples.map((s) => (s.rss[name]! / 2 ** 20).toFixed(0)).join(' ')}`)
      .join('; ')}`,
  );
  console.log(
    `V8 heap used per minute (MB, minutes 0–${MINUTES}; for reference: read beside RSS): ${Object.keys(pids)
      .map((name) => `${name} ${samples.map((s) => (s.heap[name]! / 2 ** 20).toFixed(0)).join(' ')}`)
      .join('; ')}`,
  );
  const cores = (seconds: number) => (seconds / soakSeconds).toFixed(2);
  const ours = Object.values(cpu).reduce((n, x) => n + x, 0);
  console.log(
    `CPU during the soak, in cores of ${os.cpus().length}: ${Object.entries(cpu)
      .map(([name, seconds]) => `${name} ${cores(seconds)}`)
      .join(', ')}; all of these ${cores(ours)}, whole machine ${cores(end.busy - start.busy)}`,
  );
  console.log(`warnings in the recorder's and dispatcher's logs: ${serviceWarnings.length}`);
  for (const line of serviceWarnings.slice(0, 5)) console.log(`  ${line.slice(0, 300)}`);
}

await runBench(main);
