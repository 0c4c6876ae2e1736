// Part 3 of `pnpm bench:dispatcher`: end to end with the recorder. Trips inserted at 500/s as the
// host application writes them, each timed from its commit to its webhook's arrival at the
// receiver: p99 ≤ 250 ms. The recorder and a fresh dispatcher run at their defaults.
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createDb } from '@trips/db';
import { cpuBetween, pidsMatching, sampleCpu, startChild, waitReady, warnings } from './dispatcher-procs.ts';
import { verdict, type PartResult } from './dispatcher-report.ts';
import { DEFAULTS_OVERRIDDEN, deliveriesCounted, type Bench } from './dispatcher-setup.ts';
import { fmt, freePort, onCleanup, percentile } from './lib.ts';
import { startFlags } from './service-flags.ts';

const RATE = 500; // trips (so trip.created events) per second
const WARMUP_SECONDS = 2;
const SECONDS = Number(process.env.BENCH_E2E_SECONDS ?? 20);
const TARGET_P99_MS = 250;
const RECORDER = fileURLToPath(new URL('../../services/recorder/src/main.ts', import.meta.url));

const now = () => performance.timeOrigin + performance.now();

/**
 * The host application's writes: one trip per INSERT (its own transaction), started on an even
 * schedule whatever the earlier ones are doing, over 4 connections. Commit time is when the
 * INSERT's answer arrived, a little after the commit itself (in our favour by one loopback round
 * trip). Answers each measured trip's commit time, and the failed writes.
 */
async function writeTrips(bench: Bench, total: number) {
  const writer = createDb(bench.t.url, { max: 4, applicationName: 'bench-writer' });
  onCleanup(() => writer.destroy());
  const committed = new Map<string, number>();
  let failures = 0;
  const measuredFrom = WARMUP_SECONDS * RATE;
  const writes: Promise<void>[] = [];
  const started = performance.now();
  for (let written = 0; written < total; await sleep(1)) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * RATE));
    for (; written < due; written++) {
      const id = `trp_e2e${written}`;
      const measured = written >= measuredFrom;
      writes.push(
        writer
          .insertInto('trips')
          .values({ id, agency_id: bench.agencies.e2e.id, title: 'Bench', num_days: 3 })
          .execute()
          .then(
            () => {
              if (measured) committed.set(id, now());
            },
            () => void failures++,
          ),
      );
    }
  }
  await Promise.all(writes);
  return { committed, failures, seconds: (performance.now() - started) / 1000 };
}

/** When each trip's delivery arrived and its event was recorded (created_at), as the receiver saw them. */
async function awaitArrivals(bench: Bench, committed: Map<string, number>) {
  const arrived = new Map<string, number>();
  const recorded = new Map<string, number>();
  // Long enough for a delivery retried at the very end to come back from the 1 m delay queue.
  const deadline = Date.now() + 75_000;
  while ([...committed.keys()].some((id) => !arrived.has(id)) && Date.now() < deadline) {
    const { arrivals } = await bench.receiver.request<{ arrivals: [string, number, number][] }>({
      op: 'arrivals',
    });
    for (const [id, at, recordedAt] of arrivals) {
      if (arrived.has(id)) continue;
      arrived.set(id, at);
      recorded.set(id, recordedAt);
    }
    await sleep(200);
  }
  // When each first attempt started (the dispatcher's clock), after any wait in the webhook's lane.
  const rows = await bench.t.db
    .selectFrom('webhook_attempts as a')
    .innerJoin('events as e', 'e.id', 'a.event_id')
    .select(['e.object_id', 'a.attempted_at'])
    .where('e.agency_id', '=', bench.agencies.e2e.id)
    .where('a.attempt', '=', 1)
    .execute();
  const attempted = new Map(rows.map((r) => [r.object_id, new Date(r.attempted_at).getTime()]));
  return { arrived, recorded, attempted };
}

export async function endToEndPart(bench: Bench): Promise<PartResult> {
  const recorderHealth = await freePort();
  const recorder = startChild(
    'recorder',
    RECORDER,
    { ...bench.serviceEnv, RECORDER_HEALTH_PORT: String(recorderHealth) },
    false,
    startFlags('recorder'),
  );
  onCleanup(() => recorder.stop());
  await waitReady(recorder, `http://127.0.0.1:${recorderHealth}/readyz`);
  const dispatcher = await bench.startDispatcher('dispatcher-e2e', DEFAULTS_OVERRIDDEN);

  // CPU of every process involved while the trips are written: how busy the machine is.
  const groups = {
    recorder: () => [recorder.process.pid!],
    dispatcher: () => [dispatcher.process.pid!],
    receiver: () => [bench.receiver.process.pid!],
    postgres: () => pidsMatching(bench.t.name),
    rabbitmq: () => pidsMatching('beam.smp'),
    'bench (writer)': () => [process.pid],
  };
  const total = (WARMUP_SECONDS + SECONDS) * RATE;
  const cpuBefore = sampleCpu(groups);
  const writes = await writeTrips(bench, total);
  const cpu = cpuBetween(cpuBefore, sampleCpu(groups));
  const { committed } = writes;
  const { arrived, recorded, attempted } = await awaitArrivals(bench, committed);
  // An event that never arrived counts as infinitely late, so it can only raise the percentiles.
  const latencies = [...committed]
    .map(([id, at]) => (arrived.get(id) ?? Infinity) - at)
    .sort((x, y) => x - y);
  const missing = latencies.filter((l) => l === Infinity).length;
  // Where the time went: commit → recorded (the event's created_at: the recorder's transaction
  // time, whole milliseconds), → the first attempt's start, → received.
  const split = (of: (id: string, at: number) => number) =>
    [...committed]
      .filter(([id]) => arrived.has(id))
      .map(([id, at]) => of(id, at))
      .sort((x, y) => x - y);
  const spread = (xs: number[]) => [50, 95, 99].map((p) => fmt.ms(percentile(xs, p))).join(' / ');
  const result: PartResult = {
    rows: [],
    notes: [],
    warnings: [...warnings(dispatcher.log()), ...warnings(recorder.log())],
  };
  const held = await deliveriesCounted(dispatcher, 'held');
  await dispatcher.stop();
  await recorder.stop();
  const p99 = percentile(latencies, 99);
  const busy = Object.values(cpu).reduce((n, x) => n + x, 0) / writes.seconds / os.cpus().length;
  result.rows.push([
    `end to end: commit → received at ${RATE} trips/s, ${latencies.length} events`,
    `p50 ${fmt.ms(percentile(latencies, 50))} / p95 ${fmt.ms(percentile(latencies, 95))} / p99 ${fmt.ms(p99)} ms`,
    `p99 ≤ ${TARGET_P99_MS} ms: ${verdict(p99 <= TARGET_P99_MS)}`,
  ]);
  result.notes.push(
    `end to end: ${committed.size} trips measured, written in ${writes.seconds.toFixed(1)} s with ${WARMUP_SECONDS} s unmeasured first; ` +
      `max ${fmt.ms(latencies.at(-1) ?? NaN)} ms; ` +
      `${missing} never arrived (counted as infinitely late); ${writes.failures} failed writes; ` +
      `${held} deliveries went through the webhook's lane`,
    `end to end, p50 / p95 / p99: commit → recorded ${spread(split((id, at) => recorded.get(id)! - at))} ms, ` +
      `recorded → attempt started ${spread(split((id) => attempted.get(id)! - recorded.get(id)!))} ms (published, consumed, its turn), ` +
      `attempt → received ${spread(split((id) => arrived.get(id)! - attempted.get(id)!))} ms`,
    `end to end: CPU while writing, µs per trip: ${Object.entries(cpu)
      .map(([group, seconds]) => `${group} ${((seconds * 1e6) / total).toFixed(0)}`)
      .join(', ')}; the machine ${(busy * 100).toFixed(0)} % busy`,
  );
  return result;
}
