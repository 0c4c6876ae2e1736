// Part 4 of `pnpm bench:dispatcher`: signing, what the second HMAC and ed25519 cost the dispatcher.
// Its CPU per delivery with one HMAC (Service-Signature alone), both HMACs (and webhook-signature,
// D11) and with ed25519 too; targets ≤ 1.05× and ≤ 1.3× one, judged by one HMAC's CPU per delivery
// and what each way adds to an attempt, measured in the attempt (signing-sender.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cpuBetween, sampleCpu, warnings } from './dispatcher-procs.ts';
import { startFeeder } from './dispatcher-feeder.ts';
import { verdict, type PartResult } from './dispatcher-report.ts';
import { sum, type Bench } from './dispatcher-setup.ts';
import { OURS_SETTINGS } from './dispatcher-throughput.ts';
import { fmt, median } from './lib.ts';

const WARMUP_SECONDS = 2;
/** Cycles of the signing part: each measures the three ways of signing back to back, each in turn first. */
const SIGNING_CYCLES = 15;
const SIGNING_WINDOW_SECONDS = 2;
const SIGNING_SETTLE_MS = 250;
const TARGET_BOTH_HMACS = 1.05;
const TARGET_ED25519 = 1.3;
const SIGNING_MODES = fileURLToPath(new URL('./signing-modes-preload.ts', import.meta.url));

export async function signingPart(bench: Bench): Promise<PartResult> {
  // One dispatcher and one webhook (switched to ed25519) under a steady backlog, its signing
  // switched over IPC (signing-modes.ts) from window to window: the same process, connections,
  // JIT and endpoint for every way, so that consecutive windows differ in signing alone.
  const signer = await bench.startDispatcher(
    'dispatcher-signing',
    OURS_SETTINGS, // as the throughput part's dispatcher runs
    ['--import', SIGNING_MODES],
  );
  const ways = [
    { name: 'one HMAC', mode: 'one' },
    { name: 'both HMACs', mode: 'both' },
    { name: 'both HMACs and ed25519', mode: 'ed25519' },
  ] as const;
  const { ed25519 } = bench.agencies;
  const path = ed25519.paths[0]!;
  const groups = { signer: () => [signer.process.pid!] };
  /** Each way's attempts and the CPU µs they took before they first waited (signing-sender.ts). */
  const sendCost = ways.map(() => ({ attempts: 0, cpuUs: 0 }));
  /** The signer's CPU µs per delivery over one window of one way of signing. */
  const measure = async (way: (typeof ways)[number], w?: number) => {
    await signer.request({ op: 'signing', mode: way.mode });
    await sleep(SIGNING_SETTLE_MS); // attempts signed the previous way finish
    await signer.request({ op: 'send-cost' }); // from zero
    const cpuA = sampleCpu(groups);
    const a = await bench.snapshot();
    await sleep(SIGNING_WINDOW_SECONDS * 1000);
    const b = await bench.snapshot();
    const cpu = cpuBetween(cpuA, sampleCpu(groups));
    const cost = await signer.request<{ attempts: number; cpuUs: number }>({ op: 'send-cost' });
    if (w !== undefined) {
      sendCost[w]!.attempts += cost.attempts;
      sendCost[w]!.cpuUs += cost.cpuUs;
    }
    return (cpu.signer! * 1e6) / (sum(b, [path]) - sum(a, [path]));
  };
  const feed = startFeeder(bench, ed25519.id, [path]);
  await sleep(WARMUP_SECONDS * 1000);
  for (const way of ways) await measure(way); // unmeasured: connections, JIT, keys read
  feed.resetLowest();
  const perWay = ways.map(() => [] as number[]);
  for (let cycle = 0; cycle < SIGNING_CYCLES; cycle++) {
    for (let i = 0; i < ways.length; i++) {
      const w = (i + cycle) % ways.length;
      perWay[w]!.push(await measure(ways[w]!, w));
    }
  }
  const lowest = feed.lowest;
  await feed.drain();
  const result: PartResult = { rows: [], notes: [], warnings: warnings(signer.log()) };
  await signer.stop();
  // The verdict: one HMAC's CPU per delivery (the median window) plus what each way adds where
  // the ways differ, the attempt before it first waits, averaged over every attempt of the windows.
  // A window's CPU per delivery moves by a fifth from one to the next, more than the few µs the
  // second HMAC adds, so the ratio of windows is printed beside it for reference.
  const base = median(perWay[0]!);
  const perAttempt = sendCost.map((c) => c.cpuUs / c.attempts);
  const ratioTo = (w: number) => (base + perAttempt[w]! - perAttempt[0]!) / base;
  const windowRatio = (w: number) => median(perWay[w]!.map((us, cycle) => us / perWay[0]![cycle]!));
  const [both, withEd25519] = [ratioTo(1), ratioTo(2)];
  const how = (w: number) =>
    `${fmt.ratio(ratioTo(w))} (${base.toFixed(0)} µs + ${(perAttempt[w]! - perAttempt[0]!).toFixed(1)} µs; the windows' median ratio ${fmt.ratio(windowRatio(w))})`;
  result.rows.push(
    [
      'signing: dispatcher CPU per delivery, one HMAC (Service-Signature alone)',
      `${base.toFixed(0)} µs`,
      'the baseline',
    ],
    [
      'signing: both HMACs (Service-Signature and webhook-signature)',
      `${median(perWay[1]!).toFixed(0)} µs`,
      `≤ ${TARGET_BOTH_HMACS} × one: ${how(1)} ${verdict(both <= TARGET_BOTH_HMACS)}`,
    ],
    [
      'signing: both HMACs and ed25519 (v1a)',
      `${median(perWay[2]!).toFixed(0)} µs`,
      `≤ ${TARGET_ED25519} × one: ${how(2)} ${verdict(withEd25519 <= TARGET_ED25519)}`,
    ],
  );
  result.notes.push(
    `signing, CPU µs of an attempt before it first waits (body, signing, request and headers), over ${sendCost
      .map((c, w) => `${c.attempts} attempts ${ways[w]!.name}: ${perAttempt[w]!.toFixed(1)}`)
      .join('; ')}`,
  );
  result.notes.push(
    `signing, CPU µs per delivery of the dispatcher by cycle (${SIGNING_CYCLES} × ${SIGNING_WINDOW_SECONDS} s each way): ${ways
      .map((way, w) => `${way.name} ${perWay[w]!.map((us) => us.toFixed(0)).join('/')}`)
      .join('; ')}; lowest backlog ${lowest} deliveries`,
  );
  return result;
}
