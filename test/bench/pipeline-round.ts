// One round of one pipeline in `pnpm bench:pipeline`: start its processes and a writer, write a
// few seconds unmeasured and wait for them to arrive, then count the CPU of every process group
// from just before the window's first INSERT until its last event has reached the receiver. The
// window starts and ends with nothing in flight, so the CPU between the two samples is the
// window's events' and nothing else's (but idle polling, a few ms of it).
import { fileURLToPath } from 'node:url';
import { createPool } from '@trips/db';
import { cpuBetween, pidsMatching, sampleCpu, startChild, warnings, type Child } from './dispatcher-procs.ts';
import { onCleanup } from './lib.ts';
import type { PipelineName, Target } from './pipeline-targets.ts';

const WRITER = fileURLToPath(new URL('./pipeline-writer.ts', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface RoundSettings {
  rate: number;
  seconds: number;
  warmupSeconds: number;
  /** How long the last events of a window may take to arrive before the round fails. */
  drainSeconds: number;
}

export interface RoundResult {
  pipeline: PipelineName;
  round: number;
  /** Events written in the window, every one of them received. */
  events: number;
  /** CPU seconds per process group over the window. */
  cpu: Record<string, number>;
  /** Commit → received of each of the window's events, ms, sorted. */
  latencies: number[];
  /** Seconds from the window's first INSERT to its last event received. */
  elapsed: number;
  /** The services' log lines at warn or above. */
  warnings: string[];
}

/**
 * The receiver's arrivals, by trip id: when each first arrived (at least once: a second delivery
 * of the same event keeps the first time).
 */
export class Arrivals {
  private readonly at = new Map<string, number>();
  private readonly receiver: Child;

  constructor(receiver: Child) {
    this.receiver = receiver;
  }

  get(id: string): number | undefined {
    return this.at.get(id);
  }

  private async pull(): Promise<void> {
    const { arrivals } = await this.receiver.request<{ arrivals: [string, number, number][] }>({
      op: 'arrivals',
    });
    for (const [id, at] of arrivals) if (!this.at.has(id)) this.at.set(id, at);
  }

  /** Waits until every one of `ids` has arrived; fails naming how many did not within `timeoutMs`. */
  async waitFor(ids: readonly string[], timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.pull();
      const missing = ids.reduce((n, id) => n + (this.at.has(id) ? 0 : 1), 0);
      if (missing === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `${what}: ${missing} of ${ids.length} events had not reached the receiver ${timeoutMs / 1000} s after the last write`,
        );
      }
      await sleep(100);
    }
  }
}

interface Written {
  committed: [string, number][];
  failures: number;
}

/** The broker node's processes: not a rabbitmqctl that someone runs meanwhile (also a beam.smp). */
export const brokerPids = () => pidsMatching('-s rabbit boot');

/** Whose a backend is, by its connection's application_name: ours', the baseline's and bare's. */
const CLIENTS: Record<string, 'writer' | 'recorder' | 'dispatcher'> = {
  'bench-writer': 'writer',
  'trips-recorder': 'recorder',
  'bench-bare-relay': 'recorder',
  'trips-dispatcher': 'dispatcher',
  'trips-dispatcher-express': 'dispatcher',
  'bench-bare-consumer': 'dispatcher',
};

/**
 * The run database's backends by the process they serve (`pg writer`, `pg recorder`, `pg
 * dispatcher`), as they are now: Postgres' share split by who asks. A backend opened later in the
 * window is in the Postgres total but in none of these.
 */
async function backendsByClient(dbUrl: string, dbName: string): Promise<Record<string, () => number[]>> {
  const pool = createPool(dbUrl, { max: 1, applicationName: 'bench-backends' });
  try {
    const { rows } = await pool.query<{ pid: number; application_name: string }>(
      'SELECT pid, application_name FROM pg_stat_activity WHERE datname = $1',
      [dbName],
    );
    const pids: Record<string, number[]> = { writer: [], recorder: [], dispatcher: [] };
    for (const row of rows) {
      const client = CLIENTS[row.application_name];
      if (client) pids[client]!.push(row.pid);
    }
    return Object.fromEntries(Object.entries(pids).map(([client, of]) => [`pg ${client}`, () => of]));
  } finally {
    await pool.end();
  }
}

/** Postgres' processes that serve the whole server, not one database: counted apart, not in totals. */
const PG_BACKGROUND = ['checkpointer', 'background writer', 'walwriter', 'autovacuum launcher'];

export async function runRound(
  target: Target,
  round: number,
  receiver: Child,
  arrivals: Arrivals,
  s: RoundSettings,
): Promise<RoundResult> {
  const running = await target.start(round);
  const writer = startChild(
    `${target.name}-writer`,
    WRITER,
    { DATABASE_URL: target.dbUrl, BENCH_TABLE: target.table, BENCH_AGENCY_ID: target.agencyId },
    true,
  );
  // Stopped in the finally below; also by the bench's cleanup, if it is interrupted meanwhile,
  // before it drops the databases (stopping twice does nothing).
  onCleanup(() => running.stop());
  onCleanup(() => writer.stop());
  const what = `${target.name}, round ${round}`;
  const write = async (seconds: number, idPrefix: string) => {
    const written = await writer.request<Written>({ op: 'write', rate: s.rate, seconds, idPrefix });
    if (written.failures > 0) {
      throw new Error(`${what}: ${written.failures} INSERTs failed:\n${writer.log().slice(-2_000)}`);
    }
    return written.committed;
  };
  try {
    await writer.next((m) => m.ready === true);
    const warm = await write(s.warmupSeconds, `trp_${target.name}_r${round}_warm`);
    await arrivals.waitFor(
      warm.map(([id]) => id),
      s.drainSeconds * 1000,
      `${what}, warm-up`,
    );

    const groups: Record<string, () => number[]> = {
      postgres: () => pidsMatching(target.dbName),
      rabbitmq: brokerPids,
      recorder: () => [running.recorder.process.pid!],
      dispatcher: () => [running.dispatcher.process.pid!],
      receiver: () => [receiver.process.pid!],
      writer: () => [writer.process.pid!],
      // Their command lines read `postgres: 15/main: walwriter` and so on.
      'pg background': () => PG_BACKGROUND.flatMap((name) => pidsMatching(`: ${name}`)),
      ...(await backendsByClient(target.dbUrl, target.dbName)),
    };
    const before = sampleCpu(groups);
    const started = performance.now();
    const committed = await write(s.seconds, `trp_${target.name}_r${round}_`);
    await arrivals.waitFor(
      committed.map(([id]) => id),
      s.drainSeconds * 1000,
      what,
    );
    const cpu = cpuBetween(before, sampleCpu(groups));
    const elapsed = (performance.now() - started) / 1000;
    const latencies = committed.map(([id, at]) => arrivals.get(id)! - at).sort((a, b) => a - b);
    return {
      pipeline: target.name,
      round,
      events: committed.length,
      cpu,
      latencies,
      elapsed,
      // Read before the children stop: stopping removes their log files.
      warnings: [...warnings(running.recorder.log()), ...warnings(running.dispatcher.log())],
    };
  } finally {
    await writer.stop();
    await running.stop();
  }
}
