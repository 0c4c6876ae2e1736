// The whole system on this machine, as `pnpm bench:soak` and `pnpm bench:capacity` run it: a test
// database and AMQP prefix of its own; the API, the recorder and the dispatcher as processes of
// their own with production settings (but the limiter that never refuses, and the local receiver's
// test CA); a local HTTPS receiver in a process of its own that notes when each delivery arrived;
// one agency with an API key and one webhook (trip.created) at that receiver; trips for the API to
// read; and the API load in a process of its own. The host application's writes (writeTrips) come
// from the bench process itself, as a host application's would. The pipeline between the writes
// and the receiver is ours (the recorder and the dispatchers) or the bare one of pipeline-bare.ts,
// the floor of the same work, with the API and its load beside either.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { queueNames, topology } from '@trips/broker';
import { createPool } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  randomAmqpPrefix,
  type TestDatabase,
} from '@trips/testkit';
import { deleteAmqp, pidsMatching, startChild as startProcess, type Child } from './dispatcher-procs.ts';
import { PIPELINE_SHAPES, startPipeline, type Pipeline } from './system-pipeline.ts';
import { startFlags, type Service } from './service-flags.ts';
import { readMemory, type MemoryReading } from './soak-memory.ts';
import { freePort, median, onCleanup, saturate, startChild as startServer, type ChildServer } from './lib.ts';

const API = fileURLToPath(new URL('../../services/api/src/main.ts', import.meta.url));
const RECEIVER = fileURLToPath(new URL('./dispatcher-receiver.ts', import.meta.url));
const API_LOAD = fileURLToPath(new URL('./soak-api-load.ts', import.meta.url));

/** Trips the API reads, in turn. */
const READ_TRIPS = 1_000;
/**
 * Connections the host application's writes share: one trip per transaction at 1,000 a second,
 * each commit taking 5–15 ms on a busy machine, keeps 5–15 in flight. Fewer, and the writer
 * falls behind its rate whenever Postgres is slow, offering less load just when it matters.
 */
const WRITER_CONNECTIONS = 16;
/** The API's maximum is measured as bench:api does: 20 connections, median of short rounds. */
const MAX_CONNECTIONS = 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Epoch ms, sub-millisecond: the receiver stamps arrivals on the same clock. */
export const now = () => performance.timeOrigin + performance.now();

export type { Service };

export type { Pipeline };

export interface System {
  pipeline: Pipeline;
  /** The table the host's writes go to (each INSERT makes one trip.created event). */
  tripsTable: string;
  /** Where the pipeline keeps the events it made. */
  eventsTable: string;
  t: TestDatabase;
  agencyId: string;
  /** The API's address, and what the API load sends. */
  api: ChildServer;
  headers: Record<string, string>;
  readPaths: string[];
  receiver: Child;
  /** The API load's process (soak-api-load.ts). */
  load: Child;
  /** The first dispatcher's, for the others see `dispatcherMetricsPorts` (bare: relay, consumer). */
  pids: Record<Service, number>;
  /** Ours only. */
  metricsPorts: Record<Service, number>;
  /** Every dispatcher's metrics port; none in the bare pipeline. */
  dispatcherMetricsPorts: number[];
  /** Each process's pids by name, for CPU accounting (dispatcher-procs.ts sampleCpu). */
  cpuGroups: Record<string, () => number[]>;
  /** The host application's connections (writeTrips). */
  writer: ReturnType<typeof createPool>;
  /** Deliveries received so far. */
  delivered(): Promise<number>;
  /** Arrivals since the last call: trip id, when it arrived, and when its event was recorded. */
  arrivals(): Promise<[string, number, number][]>;
  /** What is still on its way: the outbox, the unpublished events, each queue. */
  backlog(): Promise<Record<string, number>>;
  /** Each service's memory, split (soak-memory.ts). */
  memory(): Promise<Record<Service, MemoryReading>>;
  log(service: 'recorder' | 'dispatcher'): string;
}

/**
 * `serviceEnv`: set for the API, the recorder and the dispatcher alike (e.g. NODE_OPTIONS).
 * `dispatchers`: how many dispatcher replicas compete for the queues (the first is `pids.dispatcher`).
 */
export async function startSystem(
  serviceEnv: Record<string, string> = {},
  { dispatchers: dispatcherCount = 1, pipeline = 'ours' as Pipeline } = {},
): Promise<System> {
  const ca = await createTestCa();
  const t = await createTestDatabase();
  onCleanup(() => t.drop());
  const prefix = randomAmqpPrefix();
  // The dispatcher's queues with its default delays, as it runs here.
  const names = topology(prefix, readConfig({}).policy.queueDelaysMs);
  onCleanup(() => deleteAmqp(prefix, names));

  const receiver = startProcess(
    'receiver',
    RECEIVER,
    { BENCH_TLS_KEY: ca.key, BENCH_TLS_CERT: ca.cert },
    true,
  );
  onCleanup(() => receiver.stop());
  const { port } = await receiver.next<{ port: number }>((m) => m.ready === true);
  // The receiver notes the arrival time of every delivery to a path starting with /e2e.
  const path = '/e2e/system';
  const delivered = async () =>
    (await receiver.request<{ counts: Record<string, number> }>({ op: 'snapshot' })).counts[path] ?? 0;
  const webhookUrl = `https://127.0.0.1:${port}${path}`;
  const { agencyId, key, readIds, webhook } = await seed(t, webhookUrl);

  const env = {
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    LOG_LEVEL: 'info',
    ...serviceEnv,
  };
  const shape = PIPELINE_SHAPES[pipeline];
  const { relayer, senders, queues } = await startPipeline(pipeline, {
    env,
    dispatchers: dispatcherCount,
    caFile: ca.caFile,
    ourQueues: queueNames(names),
    webhookUrl,
    webhook,
  });
  // As bench:api runs it: the limiter works on every request but never refuses.
  const apiMetricsPort = await freePort();
  const api = await startServer(
    'system-api',
    API,
    {
      ...env,
      RATE_LIMIT_PER_SECOND: '1000000000',
      RATE_LIMIT_BURST: '1000000000',
      API_METRICS_PORT: String(apiMetricsPort),
    },
    '/healthz',
    startFlags('api'),
  );
  onCleanup(() => api.stop());

  // The seeded trips' events go through first, so they are not part of any figure.
  const seeded = shape.carriesSeededTrips ? READ_TRIPS : 0;
  for (const deadline = Date.now() + 60_000; (await delivered()) < seeded; await sleep(200)) {
    if (Date.now() > deadline) throw new Error('the seeded trips were not all delivered within 60 s');
  }
  await receiver.request({ op: 'arrivals' });
  const load = startProcess('api-load', API_LOAD, {}, true);
  onCleanup(() => load.stop());
  await load.next((m) => m.ready === true);
  const writer = createPool(t.url, { max: WRITER_CONNECTIONS, applicationName: 'bench-writer' });
  onCleanup(() => writer.end());
  const conn = await amqplib.connect(amqpUrl);
  onCleanup(() => conn.close().catch(() => {}));

  const pids = { api: api.pid, recorder: relayer.process.pid!, dispatcher: senders[0]!.process.pid! };
  const metricsPorts = {
    api: apiMetricsPort,
    recorder: relayer.metricsPort ?? NaN,
    dispatcher: senders[0]!.metricsPort ?? NaN,
  };
  return {
    pipeline,
    tripsTable: shape.tripsTable,
    eventsTable: shape.eventsTable,
    t,
    agencyId,
    api,
    headers: { authorization: `Bearer ${key}` },
    readPaths: readIds.map((id) => `/api/v1/trips/${id}`),
    receiver,
    load,
    pids,
    metricsPorts,
    dispatcherMetricsPorts: senders.flatMap((d) => (d.metricsPort === undefined ? [] : [d.metricsPort])),
    cpuGroups: {
      api: () => [pids.api],
      [shape.relayer]: () => [pids.recorder],
      [shape.sender]: () => senders.map((d) => d.process.pid!),
      receiver: () => [receiver.process.pid!],
      'API load': () => [load.process.pid!],
      'bench (writer)': () => [process.pid],
      postgres: () => pidsMatching(t.name),
      rabbitmq: () => pidsMatching('beam.smp'),
    },
    writer,
    delivered,
    arrivals: async () =>
      (await receiver.request<{ arrivals: [string, number, number][] }>({ op: 'arrivals' })).arrivals,
    backlog: async () => {
      const ch = await conn.createChannel();
      const counts: Record<string, number> = {};
      for (const table of shape.queueTables) counts[table] = await countRows(t, table);
      for (const queue of queues)
        counts[queue.slice(prefix.length)] = (await ch.checkQueue(queue)).messageCount;
      await ch.close();
      return counts;
    },
    memory: async () => {
      const services = Object.keys(pids) as Service[];
      const readings = await Promise.all(services.map((name) => readMemory(pids[name], metricsPorts[name])));
      return Object.fromEntries(services.map((name, i) => [name, readings[i]!])) as Record<
        Service,
        MemoryReading
      >;
    },
    log: (name) => (name === 'recorder' ? relayer.log() : senders.map((d) => d.log()).join('\n')),
  };
}

/** The agency, its key and webhook, and the trips the API reads. */
async function seed(t: TestDatabase, webhookUrl: string) {
  const { id: agencyId } = await createAgency(t.db, {
    name: 'Bench Golf Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const { key } = await createApiKey(t.db, { agencyId, scopes: ['trips:read'] });
  const { webhook, secret } = await createWebhook(t.db, {
    agencyId,
    url: webhookUrl,
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
  return { agencyId, key, readIds, webhook: { id: webhook.id, secret } };
}

/** The API's maximum, as bench:api measures it: 20 connections, the median of short rounds. */
export async function apiMaximum(
  system: System,
  rounds: number,
  seconds: number,
): Promise<{ max: number; rounds: number[] }> {
  let next = 0;
  const round = async (s: number) => {
    const result = await saturate({
      url: system.api.url,
      seconds: s,
      connections: MAX_CONNECTIONS,
      headers: system.headers,
      nextPath: () => system.readPaths[next++ % system.readPaths.length]!,
    });
    if (result.failures > 0) throw new Error(`API maximum: ${result.failures} failed requests`);
    return result.rps;
  };
  await round(Math.min(3, seconds)); // unmeasured: connections, JIT
  const measured: number[] = [];
  for (let i = 0; i < rounds; i++) measured.push(await round(seconds));
  return { max: median(measured), rounds: measured };
}

/** Rows still waiting in one of the recorder's (or the relay's) tables. */
async function countRows(t: TestDatabase, table: string): Promise<number> {
  const row = await t.db
    // Kysely takes `schema.table` as such; the typed names are those of the public schema.
    .selectFrom(table as 'outbox')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** CPU seconds the whole machine has spent busy (not idle, not waiting on I/O), from /proc/stat. */
export function machineBusySeconds(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) / 100; // USER_HZ
}

/** `promise`, or an error with `message` once `ms` have passed. */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)));
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Growth over a series sampled at even steps, from a least-squares line through it rather than
 * from its two ends (one sample taken during a collection would move those): the line's rise over
 * the whole series, relative to its value at the first sample.
 */
export function fittedGrowth(values: number[]): number {
  const n = values.length;
  if (n < 2) return NaN;
  const meanX = (n - 1) / 2;
  const meanY = values.reduce((s, y) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  values.forEach((y, x) => {
    num += (x - meanX) * (y - meanY);
    den += (x - meanX) ** 2;
  });
  const slope = num / den;
  const start = meanY - slope * meanX;
  return (slope * (n - 1)) / start;
}
