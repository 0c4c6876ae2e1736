// How `pnpm bench:dispatcher` prints: the machine and its load, one table of every part's
// measurements against their targets, then each part's notes and the services' warnings.
import os from 'node:os';
import { table } from './lib.ts';

/** What one part measured: rows of the table (measurement, figure, target), notes, log warnings. */
export interface PartResult {
  rows: string[][];
  notes: string[];
  warnings: string[];
}

export const verdict = (ok: boolean) => (ok ? 'MET' : 'MISS');

export function printReport(loadBefore: number[], parts: readonly PartResult[]): void {
  console.log(
    `machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
  );
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  console.log(`load average before ${load(loadBefore)}, after ${load(os.loadavg())}`);
  console.log();
  console.log(
    table(
      ['measurement', 'figure', 'target'],
      parts.flatMap((p) => p.rows),
    ),
  );
  console.log();
  for (const note of parts.flatMap((p) => p.notes)) console.log(note);
  const warnings = parts.flatMap((p) => p.warnings);
  console.log(`warnings in the services' logs: ${warnings.length}`);
  for (const line of warnings.slice(0, 5)) console.log(`  ${line.slice(0, 300)}`);
}
