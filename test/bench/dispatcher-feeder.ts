// The feeder of `pnpm bench:dispatcher`: keeps work queued ahead of the dispatcher while it is
// measured, so that what is measured is the dispatcher and never a dispatcher waiting for work.
import { setTimeout as sleep } from 'node:timers/promises';
import { eventRecord, type EventMessage } from '@trips/contracts';
import type { Bench, Snapshot } from './dispatcher-setup.ts';

/** Deliveries kept waiting ahead of the dispatcher, over all the paths fed (a share per path). */
const BACKLOG = 1_000;
/** Events per chunk (the recorder's PUBLISH_CHUNK), and chunks published at once, each confirmed. */
const CHUNK = 20;
const PARALLEL_CHUNKS = 4;
/** The wait before the next look while the backlog is full. */
const POLL_MS = 5;
/**
 * The wait after a refusal, doubled while refusals go on, up to the most: short enough that the
 * bounded events queue (20 ready) cannot run dry meanwhile at the dispatcher's 2,000 and more
 * events a second.
 */
const BACKOFF_MS = { first: 1, most: 4 };

let eventCounter = 0;

/**
 * Publishes one event as the recorder publishes it (services/recorder/src/publisher.ts); resolves
 * whether the broker took it. The events queue is bounded (reject-publish): a refused event does
 * not count, as the recorder keeps a refused event unpublished.
 */
function publishEvent(bench: Bench, agencyId: string): Promise<boolean> {
  const n = eventCounter++;
  const event = eventRecord({
    id: `evt_bench${n}`,
    type: 'trip.created',
    object_type: 'trip',
    object_id: `trp_bench${n}`,
    data: {},
    created_at: new Date(),
  });
  const message: EventMessage = { agency_id: agencyId, event };
  return new Promise((resolve) =>
    bench.channel.publish(
      bench.names.eventsExchange,
      event.type,
      Buffer.from(JSON.stringify(message)),
      {
        persistent: true,
        contentType: 'application/json',
        messageId: event.id,
        type: event.type,
        timestamp: Math.floor(Date.now() / 1000),
        headers: { agency_id: agencyId },
      },
      (err) => resolve(!err),
    ),
  );
}

/** Publishes `count` events in parallel chunks, each chunk's confirms awaited; answers how many were taken. */
async function publishChunks(bench: Bench, agencyId: string, count: number): Promise<number> {
  const chunks = [];
  for (let left = count; left > 0; left -= CHUNK) {
    const chunk = Array.from({ length: Math.min(CHUNK, left) }, () => publishEvent(bench, agencyId));
    chunks.push(Promise.all(chunk));
  }
  return (await Promise.all(chunks)).flat().filter(Boolean).length;
}

export interface Feeder {
  /** The backlog kept per path: deliveries to each webhook published and not yet arrived. */
  readonly target: number;
  /**
   * The smallest backlog seen since the last reset, at the path that had the fewest: well above 0,
   * the dispatcher never waited for work.
   */
  readonly lowest: number;
  /** Publishes the broker refused since the last reset (the bounded events queue was full). */
  readonly refused: number;
  resetLowest(): void;
  /** Stops publishing and waits until every delivery published so far has arrived. */
  drain(): Promise<void>;
}

/**
 * Feeds the agency's webhooks at `paths` (every event is delivered to each) so that about BACKLOG
 * deliveries always wait ahead of the dispatcher: it looks at the receiver's counts, and publishes
 * what tops the backlog of the path with the fewest up, in parallel chunks. The events queue takes
 * 20 ready events (it is bounded), so most of the backlog is in the dispatcher's prefetch and the
 * webhooks' lanes, where a bulk import's is. After a refusal it backs off briefly and offers one
 * chunk at a time until the queue takes all again: a refused publish costs the broker about as
 * much as a taken one, so a full queue is not offered more than it drains.
 */
export function startFeeder(bench: Bench, agencyId: string, paths: readonly string[]): Feeder {
  const target = Math.ceil(BACKLOG / paths.length);
  let published = 0;
  let running = true;
  let lowest = Infinity;
  let refused = 0;
  let start: Snapshot | undefined;
  /** Deliveries published and not yet arrived, per path. */
  const outstanding = (s: Snapshot) =>
    paths.map((p) => published - ((s.counts[p] ?? 0) - (start!.counts[p] ?? 0)));
  const loop = (async () => {
    start = await bench.snapshot();
    let backoff = 0;
    while (running) {
      const ahead = Math.min(...outstanding(await bench.snapshot()));
      lowest = Math.min(lowest, ahead);
      const wanted = target - ahead;
      if (wanted <= 0) {
        await sleep(POLL_MS);
        continue;
      }
      const offered = Math.min(wanted, backoff > 0 ? CHUNK : CHUNK * PARALLEL_CHUNKS);
      const taken = await publishChunks(bench, agencyId, offered);
      published += taken;
      refused += offered - taken;
      if (taken === offered) backoff = 0;
      else {
        backoff = Math.min(BACKOFF_MS.most, backoff === 0 ? BACKOFF_MS.first : backoff * 2);
        await sleep(backoff);
      }
    }
  })();
  return {
    target,
    get lowest() {
      return lowest;
    },
    get refused() {
      return refused;
    },
    resetLowest: () => {
      lowest = Infinity;
      refused = 0;
    },
    async drain() {
      running = false;
      await loop;
      const deadline = Date.now() + 60_000;
      while (Math.max(...outstanding(await bench.snapshot())) > 0) {
        if (Date.now() > deadline) throw new Error(`deliveries to ${paths.join(',')} did not all arrive`);
        await sleep(50);
      }
    },
  };
}
