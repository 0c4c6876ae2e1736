// The feeder of `pnpm bench:dispatcher`: keeps work queued ahead of the dispatcher (or of the bare
// consumer, the throughput part's floor, fed the same way through an exchange of its own) while it
// is measured, so that what is measured is the consumer and never a consumer waiting for work.
import { setTimeout as sleep } from 'node:timers/promises';
import { eventRecord, type EventMessage } from '@trips/contracts';
import type { Bench, Snapshot } from './dispatcher-setup.ts';
import { median } from './lib.ts';

/** Deliveries kept waiting ahead of the dispatcher, over all the paths fed (a share per path). */
const BACKLOG = 1_000;
/**
 * Events published before their confirms are awaited (the recorder's PUBLISH_CHUNK), and the most
 * offered at once while the queue takes all it is offered, in chunks confirmed side by side.
 */
const CHUNK = 20;
const MOST = 80;
/**
 * After a refusal the next offer is what the queue took last time, or this many if that is fewer:
 * a batch refused whole must still probe for room (the recorder's MIN_WINDOW).
 */
const LEAST = 16;
/** The wait after an offer refused whole (the recorder's REFUSED_RETRY_MS), and while the backlog is full. */
const WAIT_MS = 5;

let eventCounter = 0;

/**
 * Publishes one event as the recorder publishes it (services/recorder/src/publisher.ts); resolves
 * whether the broker took it. The events queue is bounded (reject-publish): a refused event does
 * not count, as the recorder keeps a refused event unpublished.
 */
function publishEvent(bench: Bench, exchange: string, agencyId: string): Promise<boolean> {
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
      exchange,
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
async function publishChunks(
  bench: Bench,
  exchange: string,
  agencyId: string,
  count: number,
): Promise<number> {
  const chunks = [];
  for (let left = count; left > 0; left -= CHUNK) {
    const chunk = Array.from({ length: Math.min(CHUNK, left) }, () =>
      publishEvent(bench, exchange, agencyId),
    );
    chunks.push(Promise.all(chunk));
  }
  return (await Promise.all(chunks)).flat().filter(Boolean).length;
}

export interface Feeder {
  /**
   * The smallest backlog seen since the last reset, at the path that had the fewest: well above 0,
   * the dispatcher never waited for work.
   */
  readonly lowest: number;
  /** The window's lowest and median backlog per webhook, against the target, and the publishes refused. */
  describe(): string;
  /** A window starts: the lowest, the median and the refusals count from here. */
  resetLowest(): void;
  /** Stops publishing and waits until every delivery published so far has arrived. */
  drain(): Promise<void>;
}

/**
 * Feeds the agency's webhooks at `paths` (every event is delivered to each) so that about BACKLOG
 * deliveries always wait ahead of the dispatcher, publishing to `exchange` (the events exchange; for
 * the floor, the bare consumer's twin of it): it looks at the receiver's counts, and publishes what
 * tops the backlog of the path with the fewest up, in chunks confirmed side by side. The
 * events queue takes 20 ready events (it is bounded), so most of the backlog is in the
 * dispatcher's prefetch and the webhooks' lanes, where a bulk import's is. The queue refuses what
 * is beyond its bound, and the feeder paces itself as the recorder does (its publish-pace.ts):
 * after a refusal it offers what the queue took last time, doubled back while all is taken, and
 * waits briefly only after an offer refused whole. A refused publish costs the broker about as much
 * as a taken one, so a full queue is offered little more than it drains, and never nothing.
 */
export function startFeeder(
  bench: Bench,
  agencyId: string,
  paths: readonly string[],
  exchange = bench.names.eventsExchange,
): Feeder {
  const target = Math.ceil(BACKLOG / paths.length);
  let published = 0;
  let running = true;
  let lowest = Infinity;
  let refused = 0;
  /** The backlog at each look since the window started. */
  let looks: number[] = [];
  let start: Snapshot | undefined;
  /** Deliveries published and not yet arrived, per path. */
  const outstanding = (s: Snapshot) =>
    paths.map((p) => published - ((s.counts[p] ?? 0) - (start!.counts[p] ?? 0)));
  const loop = (async () => {
    start = await bench.snapshot();
    let offer = MOST;
    while (running) {
      const ahead = Math.min(...outstanding(await bench.snapshot()));
      lowest = Math.min(lowest, ahead);
      looks.push(ahead);
      const wanted = target - ahead;
      if (wanted <= 0) {
        await sleep(WAIT_MS);
        continue;
      }
      const offered = Math.min(wanted, offer);
      const taken = await publishChunks(bench, exchange, agencyId, offered);
      published += taken;
      refused += offered - taken;
      offer = taken === offered ? Math.min(MOST, offer * 2) : Math.max(LEAST, taken);
      if (taken === 0) await sleep(WAIT_MS);
    }
  })();
  return {
    get lowest() {
      return lowest;
    },
    describe: () =>
      `backlog lowest ${lowest}, median ${median(looks)} of ${target} per webhook, ${refused} publishes refused`,
    resetLowest: () => {
      lowest = Infinity;
      refused = 0;
      looks = [];
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
