// `pnpm bench:dispatcher`: the webhook dispatcher (issue 4, item 11), loopback only, in four parts:
//   1. throughput (dispatcher-throughput.ts): deliveries/s from the dispatcher to a local HTTPS
//      receiver against the bare consumer, which does the same work and nothing else, the floor
//      (target ≥ 0.8×), with bare signed https, undici and got loops beside it for reference, in
//      alternating windows;
//   2. isolation (dispatcher-isolation.ts): 10 webhooks, all healthy, then one of them hanging: the
//      other 9 keep ≥ 0.9× of their throughput;
//   3. end to end with the recorder (dispatcher-e2e.ts): trips inserted at 500/s as the host
//      application writes them, commit → webhook received p99 ≤ 250 ms;
//   4. signing (dispatcher-signing.ts): the dispatcher's CPU per delivery with one HMAC, both
//      HMACs (D11) and with ed25519 too.
// Every service, the receiver and the bare senders run as their own Node processes; this one only
// feeds, writes and counts. Results and how to read them: docs/benchmarks.md, "Dispatcher".
import os from 'node:os';
import { endToEndPart } from './dispatcher-e2e.ts';
import { isolationPart } from './dispatcher-isolation.ts';
import { printReport, type PartResult } from './dispatcher-report.ts';
import { setUp, type Bench } from './dispatcher-setup.ts';
import { signingPart } from './dispatcher-signing.ts';
import { throughputPart } from './dispatcher-throughput.ts';
import { runBench } from './lib.ts';

const PARTS: Record<string, (bench: Bench) => Promise<PartResult>> = {
  throughput: throughputPart,
  isolation: isolationPart,
  e2e: endToEndPart,
  signing: signingPart,
};
/** Which parts run (comma-separated, in this order), for profiling one at a time; all four by default. */
const chosen = new Set((process.env.BENCH_PARTS ?? Object.keys(PARTS).join(',')).split(','));

async function main() {
  const loadBefore = os.loadavg();
  const bench = await setUp();
  const results: PartResult[] = [];
  for (const [name, part] of Object.entries(PARTS)) {
    if (chosen.has(name)) results.push(await part(bench));
  }
  printReport(loadBefore, results);
}

await runBench(main);
