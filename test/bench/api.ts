// `pnpm bench:api`: what our read API costs over a bare Express + pg server answering the same
// query, its latency at half its maximum rate, and the two rate-limit stores side by side.
// Results and how to read them: docs/benchmarks.md, "API".
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import {
  runBench,
  commandCpuMeter,
  cpuMeter,
  fmt,
  median,
  onCleanup,
  saturate,
  startChild,
  stealMeter,
  summarize,
  table,
  type ChildServer,
  type LoadResult,
} from './lib.ts';
import { PacedThread } from './paced-thread.ts';
import { startFlags } from './service-flags.ts';

const TRIPS = 1_000;
/** Same for every target; 20 keeps both servers busy without queueing deep in the kernel. */
const CONNECTIONS = 20;
/** API_DB_POOL_SIZE of every server; 10 is the API's default. */
const POOL_SIZE = 10;
const ROUNDS = 3;
const ROUND_SECONDS = 5;
/** Unmeasured load before each round: pools closed their idle connections while others ran. */
const ROUND_WARMUP_SECONDS = 1;
const FIRST_WARMUP_SECONDS = 3;
/** Paced rounds at half the maximum rate, per server, alternating, each of this many seconds. */
const HALF_RATE_ROUNDS = 3;
const HALF_RATE_SECONDS = 5;
/** At the same pace, unmeasured, before each round: see paced(). */
const HALF_RATE_WARMUP_SECONDS = 1;
/** Unmeasured requests per server at that pace before its rounds, to warm the load generator. */
const CLIENT_WARMUP_REQUESTS = 15_000;
const TARGET_RATIO = 0.9;
const TARGET_P99_MS = 10;

const API_MAIN = fileURLToPath(new URL('../../services/api/src/main.ts', import.meta.url));
const BARE_API = fileURLToPath(new URL('./bare-api.ts', import.meta.url));

async function seed(db: TestDatabase['db']) {
  const { id: agencyId } = await createAgency(db, {
    name: 'Benchmark Golf Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const { key } = await createApiKey(db, { agencyId, scopes: ['trips:read'] });
  const trips = await db
    .insertInto('trips')
    .values(
      Array.from({ length: TRIPS }, (_, i) => ({
        agency_id: agencyId,
        title: `Algarve spring ${i}`,
        status: ['proposal', 'planning', 'confirmed'][i % 3]!,
        region: 'Algarve',
        base_camp: 'Vilamoura',
        start_date: i % 2 === 0 ? '2027-04-10' : null,
        end_date: i % 2 === 0 ? '2027-04-16' : null,
        num_days: 7,
        golfers: 4 + (i % 8),
      })),
    )
    .returning('id')
    .execute();
  // Half the trips have an itinerary, so the left join answers both ways.
  await db
    .insertInto('itineraries')
    .values(trips.filter((_, i) => i % 2 === 0).map(({ id }, i) => ({ trip_id: id, non_golfers: i % 3 })))
    .execute();
  return { agencyId, key, tripIds: trips.map((t) => t.id) };
}

interface Target {
  label: string;
  server: ChildServer;
  headers: Record<string, string>;
}

/** A server paced at one rate, and the rounds it answered at that rate. */
interface PacedSeries {
  label: string;
  target: Target;
  rate: number;
  rounds: LoadResult[];
  /** The server's CPU time per request in each round (user + system, its warm-up included). */
  cpuRounds: number[];
}

/** The servers under test: ours in three settings and two bare servers answering the same query. */
interface Servers {
  ours: Target;
  bare: Target;
  barePrepared: Target;
  warn: Target;
  pgStore: Target;
}

/** What the steps share: the seeded trips, the servers, and the saturated load's next trip. */
interface Bench {
  paths: string[];
  nextPath: () => string;
  servers: Servers;
  /** In the order the saturated rounds start from. */
  targets: Target[];
}

/** A target's saturated figures over its rounds, with its server's and Postgres' CPU per request. */
type Saturated = ReturnType<typeof summarize> & { cpu: number; dbCpu: number };

/** The paced series, at half ours' maximum and at half the prepared bare's own. */
interface Paced {
  rate: number;
  oursPaced: PacedSeries;
  controlPaced: PacedSeries;
  bareOwnHalfPaced: PacedSeries;
}

/** Seeds a database and starts the five servers on it, each checked to answer the same trip. */
async function setUp(): Promise<Bench> {
  const t = await createTestDatabase();
  onCleanup(() => t.drop());
  const { agencyId, key, tripIds } = await seed(t.db);
  const paths = tripIds.map((id) => `/api/v1/trips/${id}`);
  let next = 0;
  const nextPath = () => paths[next++ % paths.length]!;

  const start = async (label: string, script: string, env: Record<string, string>, auth: boolean) => {
    const server = await startChild(
      label.replace(/\W+/g, '-'),
      script,
      {
        DATABASE_URL: t.url,
        API_DB_POOL_SIZE: String(POOL_SIZE),
        // The limiter runs on every request but never refuses.
        RATE_LIMIT_PER_SECOND: '1000000000',
        RATE_LIMIT_BURST: '1000000000',
        RATE_LIMIT_STORE: 'redis',
        // Three of our servers run at once: each takes any free port for GET /metrics.
        API_METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        ...env,
      },
      '/healthz',
      // Ours' flags for the bare too: the same runtime under both.
      startFlags('api'),
    );
    onCleanup(() => server.stop());
    const headers: Record<string, string> = auth ? { authorization: `Bearer ${key}` } : {};
    return { label, server, headers };
  };
  const ours = await start('ours', API_MAIN, {}, true);
  const bare = await start('bare Express + pg', BARE_API, { BENCH_AGENCY_ID: agencyId }, false);
  // Ours prepares its lookup (@trips/db's fast-paths/precompiled-lookups.ts); pg's default, which
  // bare uses, has Postgres plan it on every request. This bare prepares it too, so ours against it
  // is what our layers cost.
  const barePrepared = await start(
    'bare, prepared',
    BARE_API,
    { BENCH_AGENCY_ID: agencyId, BENCH_PREPARED: '1' },
    false,
  );
  const warn = await start('ours, LOG_LEVEL=warn', API_MAIN, { LOG_LEVEL: 'warn' }, true);
  const pgStore = await start('ours, store postgres', API_MAIN, { RATE_LIMIT_STORE: 'postgres' }, true);
  const targets: Target[] = [ours, bare, barePrepared, warn, pgStore];

  // Every server must answer the same trip before any figure means anything.
  for (const target of targets) {
    const res = await fetch(`${target.server.url}/api/v1/trips/${tripIds[0]}`, { headers: target.headers });
    const body = (await res.json()) as { id?: string };
    if (res.status !== 200 || body.id !== tripIds[0]) {
      throw new Error(`${target.label} answered ${res.status} ${JSON.stringify(body)}`);
    }
  }
  return { paths, nextPath, servers: { ours, bare, barePrepared, warn, pgStore }, targets };
}

/** Saturates one target for `seconds` over CONNECTIONS connections; any failed request fails the bench. */
async function load(bench: Bench, target: Target, seconds: number): Promise<LoadResult> {
  const result = await saturate({
    url: target.server.url,
    seconds,
    connections: CONNECTIONS,
    headers: target.headers,
    nextPath: bench.nextPath,
  });
  if (result.failures > 0) throw new Error(`${target.label}: ${result.failures} failed requests`);
  return result;
}

/** Warms every target, then runs the saturated rounds, alternating, and prints a line per round. */
async function saturatedRounds(bench: Bench): Promise<Map<Target, Saturated>> {
  const { targets } = bench;
  console.log(
    `node ${process.version}, ${availableParallelism()} cores; ${CONNECTIONS} connections, pipelining 1, ` +
      `pool ${POOL_SIZE}; ${ROUNDS} rounds of ${ROUND_SECONDS} s per target, alternating\n`,
  );
  for (const target of targets) await load(bench, target, FIRST_WARMUP_SECONDS);

  // Alternating rounds, each starting with the next target, so that a burst of noise from the
  // rest of the machine hits every target alike rather than whichever happened to be running.
  const rounds = new Map<Target, LoadResult[]>(targets.map((target) => [target, []]));
  // The server process's own CPU time per answered request in each round (user + system, all
  // threads): what our code costs, which the machine's other load hardly moves.
  const serverCpuRounds = new Map<Target, number[]>(targets.map((target) => [target, []]));
  // And Postgres' (all its processes; only this target's backends are busy during its round).
  const dbCpuRounds = new Map<Target, number[]>(targets.map((target) => [target, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(i + round) % targets.length]!;
      await load(bench, target, ROUND_WARMUP_SECONDS);
      const serverMeter = cpuMeter(target.server.pid);
      const dbMeter = commandCpuMeter('postgres');
      const steal = stealMeter();
      const result = await load(bench, target, ROUND_SECONDS);
      const cpu = serverMeter() / result.latencies.length;
      const dbCpu = dbMeter() / result.latencies.length;
      rounds.get(target)!.push(result);
      serverCpuRounds.get(target)!.push(cpu);
      dbCpuRounds.get(target)!.push(dbCpu);
      const s = summarize([result]);
      console.log(
        `round ${round + 1}  ${target.label.padEnd(22)} ${fmt.rps(s.rps).padStart(6)} req/s` +
          `  p50 ${fmt.ms(s.p50)} ms  p99 ${fmt.ms(s.p99)} ms  server CPU ${fmt.rps(cpu)} µs/req` +
          `  Postgres ${fmt.rps(dbCpu)} µs/req  steal ${steal().toFixed(0)} %`,
      );
    }
  }
  return new Map(
    targets.map((target) => [
      target,
      {
        ...summarize(rounds.get(target)!),
        cpu: median(serverCpuRounds.get(target)!),
        dbCpu: median(dbCpuRounds.get(target)!),
      },
    ]),
  );
}

/** Runs the paced rounds at half the maximum, alternating, and prints a line per round. */
async function pacedRounds(bench: Bench, of: (target: Target) => Saturated): Promise<Paced> {
  const { ours, barePrepared } = bench.servers;
  // Half the maximum, at an even pace (see paced() for why autocannon's overallRate is not), in
  // alternating rounds like the saturated ones. Three series:
  // - ours at half its maximum: the target;
  // - the control, the prepared bare at the same pace (the same work in Postgres as ours): what
  //   the machine and the load generator themselves add to the tail at that rate;
  // - the prepared bare at half its own maximum: the same target for a server with none of our
  //   layers, so a miss there is the machine's, not our code's.
  const rate = Math.floor(of(ours).rps / 2);
  const pacedSeries = (label: string, target: Target, at: number): PacedSeries => ({
    label,
    target,
    rate: at,
    rounds: [],
    cpuRounds: [],
  });
  const oursPaced = pacedSeries('ours', ours, rate);
  const controlPaced = pacedSeries('bare, prepared (control)', barePrepared, rate);
  const bareOwnHalfPaced = pacedSeries(
    'bare, prepared, own half',
    barePrepared,
    Math.floor(of(barePrepared).rps / 2),
  );
  const series = [oursPaced, controlPaced, bareOwnHalfPaced];
  // The paced client runs on a thread of its own, out of reach of this thread's collections.
  const client = new PacedThread();
  onCleanup(() => client.close());
  const pacedLoad = (one: PacedSeries, seconds: number, warmupSeconds: number) =>
    client.run({
      url: one.target.server.url,
      headers: one.target.headers,
      seconds,
      warmupSeconds,
      connections: CONNECTIONS,
      rate: one.rate,
      paths: bench.paths,
    });
  // One unmeasured pass per series first. The load generator's own HTTP client is new here
  // (autocannon drove the saturated rounds), and its first pass stalls some 10 000 requests in, at
  // the same point against a trivial server too (most likely V8 optimizing the client's code), so
  // whichever server went first took the stall: a warm server's first pass measured a p99 many
  // times its later ones' (docs/benchmarks/api.md, "Runs on the AMD machine, and the load
  // generator warmed").
  for (const one of series) await pacedLoad(one, Math.ceil(CLIENT_WARMUP_REQUESTS / one.rate), 0);
  for (let round = 0; round < HALF_RATE_ROUNDS; round++) {
    for (let i = 0; i < series.length; i++) {
      const one = series[(i + round) % series.length]!;
      // How busy the server's own process is at this pace (its warm-up second included): the
      // nearer a whole core, the longer the queues a burst from elsewhere leaves behind.
      const serverMeter = cpuMeter(one.target.server.pid);
      const steal = stealMeter();
      const startedAt = performance.now();
      const result = await pacedLoad(one, HALF_RATE_SECONDS, HALF_RATE_WARMUP_SECONDS);
      if (result.failures > 0) throw new Error(`${one.label}, paced: ${result.failures} failed requests`);
      const cpu = serverMeter();
      const busy = cpu / ((performance.now() - startedAt) * 1000);
      // paced() starts exactly `rate` requests a second, its warm-up included.
      const cpuPerRequest = cpu / (one.rate * (HALF_RATE_SECONDS + HALF_RATE_WARMUP_SECONDS));
      one.rounds.push(result);
      one.cpuRounds.push(cpuPerRequest);
      const s = summarize([result]);
      console.log(
        `paced ${round + 1}  ${one.label.padEnd(26)} ${one.rate} req/s  p50 ${fmt.ms(s.p50)} ms  p99 ${fmt.ms(s.p99)} ms` +
          `  server CPU ${(busy * 100).toFixed(0)} % of a core, ${fmt.rps(cpuPerRequest)} µs/req` +
          `  steal ${steal().toFixed(0)} %`,
      );
    }
  }
  return { rate, oursPaced, controlPaced, bareOwnHalfPaced };
}

/** Ours at the paced rate with autocannon's overallRate, bursty, for reference. */
async function burstyRound(bench: Bench, rate: number) {
  const { ours } = bench.servers;
  const atHalfBursty = summarize([
    await saturate({
      url: ours.server.url,
      seconds: HALF_RATE_SECONDS,
      connections: CONNECTIONS,
      overallRate: rate,
      headers: ours.headers,
      nextPath: bench.nextPath,
    }),
  ]);
  if (atHalfBursty.failures > 0) throw new Error(`half rate: ${atHalfBursty.failures} failed requests`);
  return atHalfBursty;
}

/** Prints the table of every measurement and the verdicts against the targets. */
function report(
  { servers }: Bench,
  of: (target: Target) => Saturated,
  { rate, oursPaced, controlPaced, bareOwnHalfPaced }: Paced,
  atHalfBursty: ReturnType<typeof summarize>,
) {
  const { ours, bare, barePrepared, warn, pgStore } = servers;
  const atHalf = summarize(oursPaced.rounds);
  const controlAtHalf = summarize(controlPaced.rounds);
  const bareAtOwnHalf = summarize(bareOwnHalfPaced.rounds);
  // A server at half its maximum is busy (paced cost) / (2 × saturated cost) of a core: the
  // dearer an even pace makes its requests, the less headroom it keeps for a stall to drain.
  const paceCost = (one: PacedSeries) => {
    const pacedCpu = median(one.cpuRounds);
    const saturatedCpu = of(one.target).cpu;
    return (
      `${one.label} ${fmt.rps(pacedCpu)} µs/req paced, ${fmt.rps(saturatedCpu)} saturated ` +
      `(${fmt.ratio(pacedCpu / saturatedCpu)}×)`
    );
  };
  const ratio = of(ours).rps / of(bare).rps;
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  const row = (
    label: string,
    s: ReturnType<typeof summarize> & { cpu?: number; dbCpu?: number },
    vsBare: string,
    target: string,
  ) => [
    label,
    fmt.rps(s.rps),
    fmt.ms(s.p50),
    fmt.ms(s.p99),
    s.cpu === undefined ? '' : fmt.rps(s.cpu),
    s.dbCpu === undefined ? '' : fmt.rps(s.dbCpu),
    vsBare,
    target,
  ];
  const vs = (target: Target) => fmt.ratio(of(target).rps / of(bare).rps);
  console.log(
    '\n' +
      table(
        ['measurement', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'Postgres µs/req', 'vs bare', 'target'],
        [
          row(
            'ours (store redis, LOG_LEVEL=info)',
            of(ours),
            vs(ours),
            `≥ ${TARGET_RATIO}: ${verdict(ratio >= TARGET_RATIO)}`,
          ),
          row('bare Express + pg', of(bare), '1.00', ''),
          row('bare, prepared statement', of(barePrepared), vs(barePrepared), ''),
          row('ours, LOG_LEVEL=warn', of(warn), vs(warn), ''),
          row('ours, RATE_LIMIT_STORE=postgres', of(pgStore), vs(pgStore), ''),
          row(
            `ours at ${rate} req/s, paced`,
            atHalf,
            '',
            `p99 ≤ ${TARGET_P99_MS} ms: ${verdict(atHalf.p99 <= TARGET_P99_MS)}`,
          ),
          row(`bare, prepared, at ${rate} req/s, paced (control)`, controlAtHalf, '', ''),
          row(
            `bare, prepared, at ${bareOwnHalfPaced.rate} req/s (its own half max), paced`,
            bareAtOwnHalf,
            '',
            `same target: ${verdict(bareAtOwnHalf.p99 <= TARGET_P99_MS)}`,
          ),
          row(`ours at ${rate} req/s, autocannon overallRate`, atHalfBursty, '', 'bursty, for reference'),
        ],
      ),
  );
  console.log(
    `\nratio ours/bare ${fmt.ratio(ratio)} (target ≥ ${TARGET_RATIO}): ${verdict(ratio >= TARGET_RATIO)}` +
      `\np99 at half max (${rate} req/s, paced) ${fmt.ms(atHalf.p99)} ms (target ≤ ${TARGET_P99_MS} ms): ` +
      verdict(atHalf.p99 <= TARGET_P99_MS) +
      `\nthe same target for the prepared bare, at half its own max (${bareOwnHalfPaced.rate} req/s): ` +
      `${fmt.ms(bareAtOwnHalf.p99)} ms, ${verdict(bareAtOwnHalf.p99 <= TARGET_P99_MS)}` +
      `\nthe control, the prepared bare at ours' pace: ${fmt.ms(controlAtHalf.p99)} ms` +
      (controlAtHalf.p99 > TARGET_P99_MS
        ? `, over the target with none of our layers: this run's paced verdict is the machine's as much as ours`
        : `, within the target: the machine allowed it in this run`) +
      `\nours/bare prepared ${fmt.ratio(of(ours).rps / of(barePrepared).rps)} (what our layers cost, ` +
      `with the same work in Postgres)` +
      `\nrate-limit store: postgres/redis req/s ${fmt.ratio(of(pgStore).rps / of(ours).rps)}, ` +
      `p99 redis ${fmt.ms(of(ours).p99)} ms, postgres ${fmt.ms(of(pgStore).p99)} ms` +
      `\nserver CPU per request: ours ${fmt.rps(of(ours).cpu)} µs, bare ${fmt.rps(of(bare).cpu)} µs ` +
      `(bare/ours ${fmt.ratio(of(bare).cpu / of(ours).cpu)}), bare prepared ${fmt.rps(of(barePrepared).cpu)} µs` +
      `\nPostgres CPU per request: ours ${fmt.rps(of(ours).dbCpu)} µs, bare ${fmt.rps(of(bare).dbCpu)} µs, ` +
      `bare prepared ${fmt.rps(of(barePrepared).dbCpu)} µs` +
      `\nwhat an even pace costs: ${paceCost(oursPaced)}; ${paceCost(bareOwnHalfPaced)}`,
  );
}

async function main() {
  const bench = await setUp();
  const stats = await saturatedRounds(bench);
  const of = (target: Target) => stats.get(target)!;
  const paced = await pacedRounds(bench, of);
  const atHalfBursty = await burstyRound(bench, paced.rate);
  report(bench, of, paced, atHalfBursty);
}

await runBench(main);
