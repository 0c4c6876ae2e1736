// `pnpm bench:pipeline` (issue 30, item 1): the CPU each event costs from the writing transaction to
// the receiver's answer, per process, for three pipelines side by side in alternating rounds on the
// same Postgres server and broker:
//   ours      this checkout's recorder and dispatcher;
//   baseline  the same services at BENCH_BASELINE (bfbf42d), from a temporary worktree;
//   bare      the least work the spec allows (pipeline-bare.ts).
// Trips are written one per transaction at an even BENCH_RATE (300/s, below this machine's
// saturation) for BENCH_SECONDS (60) per round, BENCH_ROUNDS (2) rounds; every event goes to one
// webhook on a local HTTPS receiver. BENCH_PIPELINES picks which run; BENCH_PROFILE=<dir> writes
// CPU profiles of ours' recorder and dispatcher there and prints pg_stat_statements' top
// statements where the server has it. Method and figures: docs/benchmarks.md, "Pipeline".
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestCa } from '@trips/testkit';
import { cpuBetween, sampleCpu, startChild } from './dispatcher-procs.ts';
import { fmt, onCleanup, runBench } from './lib.ts';
import { checkoutBaseline, shortCommit } from './pipeline-baseline.ts';
import { roundLine, summary } from './pipeline-report.ts';
import { Arrivals, brokerPids, runRound, type RoundResult } from './pipeline-round.ts';
import { startStatements, topStatements } from './pipeline-statements.ts';
import {
  prepareBare,
  prepareBaseline,
  prepareOurs,
  type Context,
  type PipelineName,
  type Target,
} from './pipeline-targets.ts';

const RATE = Number(process.env.BENCH_RATE ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WARMUP_SECONDS = 3;
const DRAIN_SECONDS = 60;
const IDLE_SECONDS = 5;
const BASELINE = process.env.BENCH_BASELINE ?? 'bfbf42d';
const PROFILE = process.env.BENCH_PROFILE ? resolve(process.env.BENCH_PROFILE) : undefined;
const ALL: PipelineName[] = ['ours', 'baseline', 'bare'];
const CHOSEN = (process.env.BENCH_PIPELINES ?? ALL.join(',')).split(',').map((name) => name.trim());
/** In the table's order, whatever the variable's. */
const PIPELINES = ALL.filter((name) => CHOSEN.includes(name));

const RECEIVER = fileURLToPath(new URL('./dispatcher-receiver.ts', import.meta.url));

/** Round r runs the pipelines in turn starting from the r-th: each takes each place over the rounds. */
const rotated = <T>(xs: T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length]!);

async function main() {
  const unknown = CHOSEN.filter((name) => !(ALL as string[]).includes(name));
  if (unknown.length > 0 || PIPELINES.length === 0) {
    throw new Error(`BENCH_PIPELINES: expected some of ${ALL.join(',')}, got '${CHOSEN.join(',')}'`);
  }
  const loadBefore = os.loadavg();
  const startedAt = Date.now();
  const stamp = new Date(startedAt).toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  const ours = await shortCommit('HEAD');
  const commits = PIPELINES.includes('baseline')
    ? `ours ${ours}, baseline ${await shortCommit(BASELINE)}`
    : `ours ${ours}`;

  const ca = await createTestCa();
  const receiver = startChild(
    'pipeline-receiver',
    RECEIVER,
    { BENCH_TLS_KEY: ca.key, BENCH_TLS_CERT: ca.cert },
    true,
  );
  onCleanup(() => receiver.stop());
  const { port } = await receiver.next<{ port: number }>((m) => m.ready === true);
  const arrivals = new Arrivals(receiver);

  if (PROFILE) mkdirSync(PROFILE, { recursive: true });
  const ctx: Context = {
    receiverBase: `https://127.0.0.1:${port}`,
    caFile: ca.caFile,
    // One profile per service and round, named so; the run's start tells runs apart.
    oursNodeArgs: (service, round) =>
      PROFILE
        ? [
            '--cpu-prof',
            `--cpu-prof-dir=${PROFILE}`,
            `--cpu-prof-name=ours-${service}-${stamp}-round${round}.cpuprofile`,
          ]
        : [],
    baselineTree: PIPELINES.includes('baseline') ? await checkoutBaseline(BASELINE) : undefined,
  };
  const prepare = { ours: prepareOurs, baseline: prepareBaseline, bare: prepareBare };
  const targets: Target[] = [];
  for (const name of PIPELINES) targets.push(await prepare[name](ctx));
  const oursTarget = targets.find((t) => t.name === 'ours');
  const statements = PROFILE && oursTarget ? await startStatements(oursTarget.dbUrl) : false;

  // The broker's own upkeep with none of the pipelines running, which its row includes.
  const idleBefore = sampleCpu({ rabbitmq: brokerPids });
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const idleBroker = cpuBetween(idleBefore, sampleCpu({ rabbitmq: brokerPids })).rabbitmq! / IDLE_SECONDS;

  const results: RoundResult[] = [];
  const settings = {
    rate: RATE,
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    drainSeconds: DRAIN_SECONDS,
  };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of rotated(targets, round - 1)) {
      const result = await runRound(target, round, receiver, arrivals, settings);
      results.push(result);
      console.log(roundLine(result));
    }
  }

  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log();
  console.log(
    `node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model}; ${RATE} events/s for ${SECONDS} s, ` +
      `${ROUNDS} rounds; ${commits}; load average before ${load(loadBefore)}, after ${load(os.loadavg())}`,
  );
  for (const target of targets) console.log(target.describe);
  console.log(
    `RabbitMQ idle, before the rounds: ${(idleBroker * 100).toFixed(1)} % of a core, ` +
      `${fmt.us((idleBroker * 1e6) / RATE)} µs per event at ${RATE}/s, in its row as measured`,
  );
  console.log();
  console.log(summary(results, PIPELINES));
  if (statements && oursTarget) {
    console.log();
    console.log(await topStatements(oursTarget.dbUrl));
  }
  if (PROFILE) {
    const profiles = readdirSync(PROFILE).filter(
      (file) => file.endsWith('.cpuprofile') && statSync(join(PROFILE, file)).mtimeMs >= startedAt,
    );
    console.log(
      `CPU profiles of ours' recorder and dispatcher, this run's: ${profiles.length} in ${PROFILE}`,
    );
  }
}

await runBench(main);
