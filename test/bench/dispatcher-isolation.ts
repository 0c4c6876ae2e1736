// Part 2 of `pnpm bench:dispatcher`: isolation. One dispatcher with the production defaults
// (DISPATCHER_PREFETCH 100, DISPATCHER_ENDPOINT_CONCURRENCY 20, WEBHOOK_TIMEOUT 10s,
// WEBHOOK_RETRY_DELAYS from 1m), ten webhooks of one agency, every event delivered to all ten:
// rounds with all ten healthy and rounds with the tenth hanging (the receiver reads its requests
// and never answers). The other nine must keep ≥ 0.9 × their throughput. The feeder keeps a
// backlog ahead of every healthy webhook and each round says its lowest, so that a low rate is
// the dispatcher's and not a dispatcher waiting for work.
import { setTimeout as sleep } from 'node:timers/promises';
import { queueNames } from '@trips/broker';
import { dropHeldDeliveries } from '@trips/db/held-deliveries';
import { warnings } from './dispatcher-procs.ts';
import { startFeeder } from './dispatcher-feeder.ts';
import { verdict, type PartResult } from './dispatcher-report.ts';
import {
  DEFAULTS_OVERRIDDEN,
  deliveriesCounted,
  rate,
  sum,
  WEBHOOKS,
  type Bench,
  type Dispatcher,
} from './dispatcher-setup.ts';
import { fmt } from './lib.ts';

/** Pairs of rounds, all healthy then one hanging, after one unmeasured healthy round. */
const ROUNDS = 2;
const WARMUP_SECONDS = 2;
const WINDOW_SECONDS = 6;
const TARGET_ISOLATION = 0.9;
/** Longest wait for the lanes to empty after a hanging round. */
const SETTLE_MS = 60_000;

const mean = (xs: number[]) => xs.reduce((n, x) => n + x, 0) / xs.length;

interface Round {
  /** Deliveries/s of each healthy webhook. */
  rates: number[];
  /** The feeder's lowest backlog per healthy webhook over the window, its target and refusals. */
  feed: string;
  /**
   * Deliveries the dispatcher put in a lane during the window, against the events it took: in a
   * hanging round one each is the hanging webhook's, any beyond are healthy webhooks' deliveries.
   */
  held: string;
}

/** Deliveries waiting in the webhooks' lanes. */
async function heldIn(bench: Bench, webhookIds: string[]): Promise<number> {
  const { n } = await bench.t.db
    .selectFrom('held_deliveries')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('webhook_id', 'in', webhookIds)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/**
 * One round: a warm-up, one window, then every delivery published to the healthy webhooks
 * arrived. After a hanging round the held requests are answered and the hanging webhook's lane
 * served to the end, so the next round starts with nothing left over.
 */
async function round(bench: Bench, dispatcher: Dispatcher, hanging: boolean): Promise<Round> {
  const { paths } = bench.agencies.isolation;
  const hangPath = paths.at(-1)!;
  const healthyPaths = paths.slice(0, -1);
  if (hanging) await bench.receiver.request({ op: 'hang', path: hangPath });
  const feed = startFeeder(bench, bench.agencies.isolation.id, hanging ? healthyPaths : paths);
  await sleep(WARMUP_SECONDS * 1000);
  feed.resetLowest();
  const heldBefore = await deliveriesCounted(dispatcher, 'held');
  const a = await bench.snapshot();
  await sleep(WINDOW_SECONDS * 1000);
  const b = await bench.snapshot();
  const held = (await deliveriesCounted(dispatcher, 'held')) - heldBefore;
  const fed = feed.describe();
  await feed.drain();
  if (hanging) {
    await bench.receiver.request({ op: 'answer', path: hangPath });
    const deadline = Date.now() + SETTLE_MS;
    while ((await heldIn(bench, bench.agencies.isolation.webhookIds)) > 0) {
      if (Date.now() > deadline) throw new Error('the lanes did not empty after a hanging round');
      await sleep(100);
    }
  }
  const events = sum(b, [paths[0]!]) - sum(a, [paths[0]!]);
  return {
    rates: healthyPaths.map((p) => rate(a, b, [p])),
    feed: fed,
    held: `${held} deliveries held in lanes for ${events} events`,
  };
}

export async function isolationPart(bench: Bench): Promise<PartResult> {
  const dispatcher = await bench.startDispatcher('dispatcher-isolation', DEFAULTS_OVERRIDDEN);
  await round(bench, dispatcher, false); // warm-up, unmeasured
  const healthyRounds: number[][] = [];
  const hangingRounds: number[][] = [];
  const feeds: string[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const healthy = await round(bench, dispatcher, false);
    const hanging = await round(bench, dispatcher, true);
    healthyRounds.push(healthy.rates);
    hangingRounds.push(hanging.rates);
    feeds.push(healthy.feed, hanging.feed);
    const ratio = mean(hanging.rates) / mean(healthy.rates);
    console.log(
      `isolation round ${i + 1}: all healthy ${fmt.rps(mean(healthy.rates))}/s per endpoint ` +
        `(${healthy.feed}; ${healthy.held}), one hanging ${fmt.rps(mean(hanging.rates))}/s per ` +
        `healthy endpoint, ${fmt.ratio(ratio)} × (${hanging.feed}; ${hanging.held})`,
    );
  }
  const result: PartResult = { rows: [], notes: [], warnings: warnings(dispatcher.log()) };
  await dispatcher.stop();
  // The hanging webhook's failed attempts wait in the 1 m delay queue; none may come back during
  // the end-to-end part.
  for (const queue of queueNames(bench.names)) await bench.channel.purgeQueue(queue);
  await dropHeldDeliveries(bench.t.db, bench.agencies.isolation.webhookIds);

  const healthyPer = healthyRounds[0]!.map((_, i) => mean(healthyRounds.map((r) => r[i]!)));
  const hangingPer = hangingRounds[0]!.map((_, i) => mean(hangingRounds.map((r) => r[i]!)));
  const lowestRatio = Math.min(...healthyPer.map((h, i) => hangingPer[i]! / h));
  result.rows.push(
    [
      `isolation: ${WEBHOOKS} webhooks all healthy, per endpoint (mean of ${WEBHOOKS - 1})`,
      `${fmt.rps(mean(healthyPer))} deliveries/s`,
      '',
    ],
    [
      `isolation: 1 of ${WEBHOOKS} hanging, per healthy endpoint (mean of ${WEBHOOKS - 1})`,
      `${fmt.rps(mean(hangingPer))} deliveries/s`,
      `≥ ${TARGET_ISOLATION} × each: lowest ${fmt.ratio(lowestRatio)} ${verdict(lowestRatio >= TARGET_ISOLATION)}`,
    ],
  );
  result.notes.push(
    `isolation per endpoint, all healthy → one hanging (mean of ${ROUNDS} rounds): ` +
      healthyPer.map((r, i) => `${fmt.rps(r)}→${fmt.rps(hangingPer[i]!)}`).join(', '),
    `isolation, the feeder by window (healthy, hanging, …): ${feeds.join('; ')}`,
  );
  return result;
}
