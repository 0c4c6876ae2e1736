// What `pnpm bench:pipeline` prints: a line per round as it ends, then one table of CPU µs per event
// by process group and pipeline (the median of the rounds), the total of our processes, the
// latencies, and the ratios against the target.
import { fmt, percentile, table } from './lib.ts';
import type { RoundResult } from './pipeline-round.ts';
import type { PipelineName } from './pipeline-targets.ts';

/** Issue 30: our processes' CPU per event at most half the baseline commit's. */
export const TARGET_RATIO = 0.5;

/** The groups whose sum is "our processes": what a deployment of the pipeline pays for. */
const OURS = ['postgres', 'rabbitmq', 'recorder', 'dispatcher'];
const ROWS: [group: string, label: string][] = [
  ['postgres', "Postgres: the run database's backends"],
  ['rabbitmq', 'RabbitMQ: the whole node'],
  ['recorder', 'recorder (bare: relay)'],
  ['dispatcher', 'dispatcher (bare: consumer)'],
];
const OTHERS: [group: string, label: string][] = [
  ['pg writer', "… of which the writer's backends (in Postgres' row)"],
  ['pg recorder', "… of which the recorder's (bare: relay's)"],
  ['pg dispatcher', "… of which the dispatcher's (bare: consumer's)"],
  ['receiver', 'receiver (HTTPS, its own process)'],
  ['writer', 'writer (the host application, its own process)'],
  ['pg background', 'Postgres background processes, whole server (in no total)'],
];

/**
 * The median as the mean of the middle two for an even count: lib.ts's nearest-rank median of the
 * default two rounds would be their lower one, and a row of minimums is no median.
 */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const perEvent = (r: RoundResult, group: string) => ((r.cpu[group] ?? NaN) * 1e6) / r.events;
const total = (r: RoundResult) => OURS.reduce((n, group) => n + perEvent(r, group), 0);

/** One line as a round ends, so a long run shows where it is. */
export function roundLine(r: RoundResult): string {
  const parts = [...OURS, 'receiver', 'writer'].map((g) => `${g} ${fmt.us(perEvent(r, g))}`).join(', ');
  return (
    `round ${r.round} ${r.pipeline}: ${r.events} events, last received ${r.elapsed.toFixed(1)} s after the first write; ` +
    `µs/event: our processes ${fmt.us(total(r))} (${parts}); ` +
    `commit → received p50 ${fmt.ms(percentile(r.latencies, 50))} / p99 ${fmt.ms(percentile(r.latencies, 99))} ms`
  );
}

/** Ours' total over another's, from the medians of their totals per round. */
function ratio(results: RoundResult[], of: PipelineName, to: PipelineName): number {
  const med = (name: PipelineName) => median(results.filter((r) => r.pipeline === name).map(total));
  return med(of) / med(to);
}

export function summary(results: RoundResult[], pipelines: PipelineName[]): string {
  const rounds = (name: PipelineName) => results.filter((r) => r.pipeline === name);
  const cell = (name: PipelineName, of: (r: RoundResult) => number) => fmt.us(median(rounds(name).map(of)));
  const groupRow = ([group, label]: [string, string]) => [
    label,
    ...pipelines.map((name) => cell(name, (r) => perEvent(r, group))),
  ];
  const latencyRow = (p: number) => [
    `commit → received p${p}, ms (all rounds' events)`,
    ...pipelines.map((name) =>
      fmt.ms(
        percentile(
          rounds(name)
            .flatMap((r) => r.latencies)
            .sort((a, b) => a - b),
          p,
        ),
      ),
    ),
  ];
  const rows = [
    ...ROWS.map(groupRow),
    [`**our processes** (the four above)`, ...pipelines.map((name) => cell(name, total))],
    ...OTHERS.map(groupRow),
    latencyRow(50),
    latencyRow(99),
    [
      'events per round (every one received)',
      ...pipelines.map((name) =>
        rounds(name)
          .map((r) => r.events)
          .join(', '),
      ),
    ],
  ];
  const out = [table(['CPU µs per event (median of rounds)', ...pipelines], rows), ''];
  const has = (name: PipelineName) => pipelines.includes(name);
  if (has('ours') && has('baseline')) {
    const r = ratio(results, 'ours', 'baseline');
    out.push(
      `ours / baseline, our processes: ${fmt.ratio(r)} (target ≤ ${TARGET_RATIO}: ${r <= TARGET_RATIO ? 'met' : 'missed'})`,
    );
  }
  if (has('ours') && has('bare'))
    out.push(`ours / bare, our processes: ${fmt.ratio(ratio(results, 'ours', 'bare'))}`);
  if (has('baseline') && has('bare')) {
    out.push(`baseline / bare, our processes: ${fmt.ratio(ratio(results, 'baseline', 'bare'))}`);
  }
  const warned = results.filter((r) => r.warnings.length > 0);
  out.push(`warnings in the services' logs: ${warned.reduce((n, r) => n + r.warnings.length, 0)}`);
  for (const r of warned.slice(0, 3))
    out.push(`  ${r.pipeline} round ${r.round}: ${r.warnings[0]!.slice(0, 300)}`);
  return out.join('\n');
}
