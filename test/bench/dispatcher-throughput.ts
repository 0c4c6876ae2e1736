// Part 1 of `pnpm bench:dispatcher`: throughput. Ours (the dispatcher, one webhook, fed from the
// events exchange) against its floor, the bare consumer (pipeline-bare-consumer.ts, bench:pipeline's
// too): a benchmark's baseline is the floor for the same work, with the same HTTP client and the same
// durability. So the bare consumer consumes the same kind of queue (declared by the same topology,
// under a prefix of its own) with the same prefetch, fed by the same feeder, signs, POSTs with the
// dispatcher's client (undici's Agent as sender.ts makes it) at most CONCURRENCY at a time, records
// each attempt in webhook_attempts batched as ours does, and acks once that is committed; nothing
// else. Beside them, for reference, bare signed POST loops with the same concurrency and no queue or
// database (dispatcher-bare.ts): node:https with the agent settings the dispatcher sent with before
// undici (the old floor, which consumes, records and acks nothing), undici's Agent and got: what
// each client alone costs. One process each, in windows back to back, the order turning every
// round; deliveries a second, and CPU per delivery of the sending process and of every other party.
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { declareTopology, topology } from '@trips/broker';
import {
  cpuBetween,
  deleteAmqp,
  pidsMatching,
  sampleCpu,
  startChild,
  warnings,
  type Child,
} from './dispatcher-procs.ts';
import { startFeeder } from './dispatcher-feeder.ts';
import { rate, sum, type Agency, type Bench } from './dispatcher-setup.ts';
import { fmt, median, onCleanup } from './lib.ts';
import { BARE_CLIENTS, type BareClient } from './bare-post.ts';
import { verdict, type PartResult } from './dispatcher-report.ts';
import { startBareConsumer } from './pipeline-bare.ts';

/**
 * Requests in flight to the receiver: ours' DISPATCHER_ENDPOINT_CONCURRENCY, which alone bounds
 * ours' requests in flight, the bare consumer's cap and each bare loop's. Ours keeps its production
 * DISPATCHER_PREFETCH (100), and the bare consumer the same: at twice the cap (40) ours delivered
 * less (docs/benchmarks/dispatcher.md).
 */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 20);
const PREFETCH = 100;
/** Ours' settings over the production defaults (the signing part's dispatcher runs with them too). */
export const OURS_SETTINGS = {
  DISPATCHER_PREFETCH: String(PREFETCH),
  DISPATCHER_ENDPOINT_CONCURRENCY: String(CONCURRENCY),
};
/** Rounds of one window per sender, each round starting with the next sender. */
const ROUNDS = 5;
/** Ours and the bare consumer fill their backlog, a bare loop its connections, before each window. */
const WARMUP_SECONDS = 2;
const WINDOW_SECONDS = 4;
const TARGET_RATIO = 0.8;
/** undici replaced https because its sending cost at most this share of https's CPU per delivery (issue 43). */
const ADOPT_UNDICI_AT = 0.9;
const BARE = fileURLToPath(new URL('./dispatcher-bare.ts', import.meta.url));

interface Window {
  rps: number;
  deliveries: number;
  /** CPU seconds of each process group over the window. */
  cpu: Record<string, number>;
  /** Ours and the bare consumer: the feeder's backlog per webhook; a bare loop: failed POSTs. */
  aside: string;
}

interface Sender {
  name: string;
  child: Child;
  path: string;
  /** A warm-up, then one measured window. */
  run(seconds: number): Promise<Window>;
}

/** Sender's and the rest's CPU over one window, and the deliveries it made at `path`. */
async function measure(bench: Bench, sender: Child, path: string, seconds: number) {
  // Postgres is the backends of this run's database; RabbitMQ is the whole broker.
  const groups = {
    sender: () => [sender.process.pid!],
    receiver: () => [bench.receiver.process.pid!],
    postgres: () => pidsMatching(bench.t.name),
    rabbitmq: () => pidsMatching('beam.smp'),
    'bench (feeder)': () => [process.pid],
  };
  const cpuA = sampleCpu(groups);
  const a = await bench.snapshot();
  await sleep(seconds * 1000);
  const b = await bench.snapshot();
  const cpu = cpuBetween(cpuA, sampleCpu(groups));
  return { rps: rate(a, b, [path]), deliveries: sum(b, [path]) - sum(a, [path]), cpu };
}

/** A consumer fed by the feeder (ours, the bare consumer): its agency's one webhook, through `exchange`. */
function fed(bench: Bench, name: string, child: Child, agency: Agency, exchange?: string): Sender {
  return {
    name,
    child,
    path: agency.paths[0]!,
    async run(seconds) {
      const feed = startFeeder(bench, agency.id, [this.path], exchange);
      await sleep(WARMUP_SECONDS * 1000);
      feed.resetLowest();
      const window = await measure(bench, child, this.path, seconds);
      const aside = feed.describe();
      await feed.drain();
      return { ...window, aside };
    },
  };
}

/**
 * The bare consumer, consuming a twin of ours' events queue: the topology declared anew under a
 * prefix of its own (without delay queues: it retries nothing), so the queue is of the very kind
 * ours consumes (quorum, bounded, reject-publish), and fed through its own events exchange.
 */
async function startConsumer(bench: Bench): Promise<Sender> {
  const prefix = `${bench.serviceEnv.AMQP_PREFIX}bare.`;
  const names = topology(prefix, []);
  onCleanup(() => deleteAmqp(prefix, names));
  await declareTopology(bench.channel, names);
  const agency = bench.agencies.bare;
  const child = startBareConsumer({
    databaseUrl: bench.t.url,
    amqpUrl: bench.serviceEnv.AMQP_URL!,
    queue: names.eventsQueue,
    webhookUrl: bench.base + agency.paths[0]!,
    webhookId: agency.webhookIds[0]!,
    secret: agency.secret,
    caFile: bench.ca.caFile,
    env: {
      AMQP_QUEUE_DECLARED: 'true',
      BENCH_PREFETCH: String(PREFETCH),
      BENCH_CONCURRENCY: String(CONCURRENCY),
    },
  });
  onCleanup(() => child.stop());
  await child.next((m) => m.ready === true);
  return fed(bench, 'consumer', child, agency, names.eventsExchange);
}

async function startSenders(bench: Bench): Promise<Sender[]> {
  const dispatcher = await bench.startDispatcher('dispatcher', OURS_SETTINGS);
  const ours = fed(bench, 'ours', dispatcher, bench.agencies.throughput);
  const bare = async (client: BareClient): Promise<Sender> => {
    const path = `/t/${client}`;
    const env = {
      BENCH_TARGET_URL: bench.base + path,
      BENCH_CONCURRENCY: String(CONCURRENCY),
      BENCH_SECRET: bench.agencies.throughput.secret,
      BENCH_BARE_CLIENT: client,
      WEBHOOK_CA_FILE: bench.ca.caFile,
    };
    const child = startChild(`bare-${client}`, BARE, env, true);
    onCleanup(() => child.stop());
    await child.next((m) => m.ready === true);
    return {
      name: client,
      child,
      path,
      async run(seconds) {
        child.process.send({ op: 'start' });
        await sleep(WARMUP_SECONDS * 1000);
        const window = await measure(bench, child, path, seconds);
        child.process.send({ op: 'stop' });
        const { failures } = await child.next<{ failures: number }>((m) => m.stopped === true);
        return { ...window, aside: `${failures} failed` };
      },
    };
  };
  return [ours, await startConsumer(bench), ...(await Promise.all(BARE_CLIENTS.map(bare)))];
}

/** Each sender's windows, in round order. */
async function runRounds(senders: Sender[]): Promise<Map<string, Window[]>> {
  const windows = new Map(senders.map((s) => [s.name, [] as Window[]]));
  // A first round unmeasured (connections, JIT, Postgres' generic plans), as long as a measured one.
  for (const sender of senders) await sender.run(WINDOW_SECONDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < senders.length; i++) {
      const sender = senders[(round + i) % senders.length]!;
      windows.get(sender.name)!.push(await sender.run(WINDOW_SECONDS));
    }
    const line = senders.map((s) => {
      const w = windows.get(s.name)!.at(-1)!;
      return `${s.name} ${fmt.rps(w.rps)}/s (${w.aside})`;
    });
    console.log(`throughput round ${round + 1}: ${line.join(', ')}`);
  }
  return windows;
}

/** CPU µs per delivery of the sending process alone, window by window. */
const senderUs = (windows: Window[]) => windows.map((w) => (w.cpu.sender! * 1e6) / w.deliveries);
/** The same with the Postgres and RabbitMQ work it caused: what delivering costs, receiver and feeder aside. */
const deliveringUs = (windows: Window[]) =>
  windows.map((w) => ((w.cpu.sender! + w.cpu.postgres! + w.cpu.rabbitmq!) * 1e6) / w.deliveries);

/**
 * Ours against the floor, the bare consumer; the bare loops beside them, ours against the old floor
 * (https) among them: deliveries a second and CPU per delivery of each, and the rule for undici.
 */
export async function throughputPart(bench: Bench): Promise<PartResult> {
  const senders = await startSenders(bench);
  const windows = await runRounds(senders);
  // The bare consumer writes only when an attempt could not be recorded.
  const consumerErrors = senders[1]!.child
    .log()
    .split('\n')
    .filter((line) => line.trim() !== '');
  const result: PartResult = {
    rows: [],
    notes: [],
    warnings: [...warnings(senders[0]!.child.log()), ...consumerErrors],
  };
  for (const sender of senders) await sender.child.stop();

  // Other engineers' runs come and go on this machine: a ratio within one round compares two
  // windows seconds apart, and the median of those ratios ignores the rounds a burst hit.
  const ratio = (name: string, to: string, of: (ws: Window[]) => number[]) => {
    const mine = of(windows.get(name)!);
    const base = of(windows.get(to)!);
    return median(mine.map((x, i) => x / base[i]!));
  };
  const rps = (ws: Window[]) => ws.map((w) => w.rps);
  const figure = (name: string) => {
    const ws = windows.get(name)!;
    return `${fmt.rps(median(rps(ws)))} deliveries/s, ${fmt.us(median(senderUs(ws)))} µs CPU each`;
  };
  const vsHttps = (name: string) =>
    `${fmt.ratio(ratio(name, 'https', rps))} × https; CPU ${fmt.ratio(ratio(name, 'https', senderUs))} × https's`;
  const target = ratio('ours', 'consumer', rps);
  const undiciCpu = ratio('undici', 'https', senderUs);
  result.rows.push(
    [
      `ours: dispatcher → receiver, endpoint cap ${CONCURRENCY}, prefetch ${PREFETCH}`,
      figure('ours'),
      `≥ ${TARGET_RATIO} × the bare consumer: ${fmt.ratio(target)} ${verdict(target >= TARGET_RATIO)}; ` +
        `CPU ${fmt.ratio(ratio('ours', 'consumer', senderUs))} × its, ` +
        `${fmt.ratio(ratio('ours', 'consumer', deliveringUs))} × its with Postgres and RabbitMQ`,
    ],
    [
      `bare consumer (the floor): prefetch ${PREFETCH}, signed undici Agent POSTs, ${CONCURRENCY} in flight, attempts recorded batched, then acked`,
      figure('consumer'),
      'the floor',
    ],
    [
      `https (the old floor): bare signed node:https loop, keep-alive agent, ${CONCURRENCY} concurrent`,
      figure('https'),
      `for reference: ours ${fmt.ratio(ratio('ours', 'https', rps))} × it, ` +
        `CPU ${fmt.ratio(ratio('ours', 'https', senderUs))} × its (the old target: ≥ ${TARGET_RATIO} × it)`,
    ],
    [
      `undici: bare signed undici Agent loop (sender.ts's), ${CONCURRENCY} concurrent`,
      figure('undici'),
      `${vsHttps('undici')}: ${undiciCpu <= ADOPT_UNDICI_AT ? 'adopt' : 'keep https'} (adopt at ≤ ${ADOPT_UNDICI_AT})`,
    ],
    [
      `got: bare signed got loop, ${CONCURRENCY} concurrent`,
      figure('got'),
      `for reference: ${vsHttps('got')}`,
    ],
  );
  result.notes.push(
    `throughput, deliveries/s by round (ratios are medians of round ratios, CPU figures medians of windows): ${senders
      .map((s) => `${s.name} ${rps(windows.get(s.name)!).map(fmt.rps).join('/')}`)
      .join('; ')}`,
    `throughput, sending process CPU µs per delivery by round: ${senders
      .map((s) => `${s.name} ${senderUs(windows.get(s.name)!).map(fmt.us).join('/')}`)
      .join('; ')}`,
  );
  for (const sender of senders) {
    const ws = windows.get(sender.name)!;
    const deliveries = ws.reduce((n, w) => n + w.deliveries, 0);
    const perGroup = Object.keys(ws[0]!.cpu).map((group) => {
      const seconds = ws.reduce((n, w) => n + w.cpu[group]!, 0);
      return [group === 'sender' ? sender.name : group, (seconds * 1e6) / deliveries] as const;
    });
    const all = perGroup.reduce((n, [, us]) => n + us, 0);
    result.notes.push(
      `CPU µs per delivery over ${sender.name}'s windows: ${perGroup.map(([g, us]) => `${g} ${fmt.us(us)}`).join(', ')}; total ${fmt.us(all)}; ${ws.map((w) => w.aside).join(', ')}`,
    );
  }
  return result;
}
