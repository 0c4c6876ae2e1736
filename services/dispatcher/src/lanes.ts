import type { Publisher } from '@trips/broker/client';
import { isValid, type DeliveryMessage } from '@trips/contracts';
import type { HeldDelivery } from '@trips/db/held-deliveries';
import { atMostEvery, Loop, type Logger } from '@trips/runtime';
import type { Deliverer, LaneEntry } from './deliverer.ts';
import type { Endpoints } from './endpoint/endpoints.ts';
import type { DeliveryStore, HoldOptions } from './store.ts';
import type { Target } from './targets-cache.ts';

/**
 * Rings the lanes about a webhook: a delivery was held in its lane, or it may have room again (an
 * attempt ended, its pause or rate lets one through, its breaker's trial is due). Made before the
 * endpoints and the deliverer, which ring it, and answered by the lanes, which are made after them
 * and serve the lane by attempting through the deliverer.
 */
export class LaneBell {
  private answer: (webhookId: string, why: 'held' | 'room') => void = () => {};

  ring(webhookId: string, why: 'held' | 'room'): void {
    this.answer(webhookId, why);
  }

  answeredBy(answer: (webhookId: string, why: 'held' | 'room') => void): void {
    this.answer = answer;
  }
}

/** How a delivery enters its webhook's lane: committed, then the lanes are rung. */
export function laneEntry(store: DeliveryStore, bell: LaneBell): LaneEntry {
  return {
    async hold(delivery: DeliveryMessage, options: HoldOptions = {}) {
      await store.hold(delivery, options);
      bell.ring(delivery.webhook_id, 'held');
    },
  };
}

export interface LaneOptions {
  /** A claim lasts this long; a dispatcher that dies leaves its claims to expire, then another takes them. */
  leaseMs: number;
  /** How often the lanes holding deliveries are looked up: other dispatchers' holds, expired claims. */
  scanIntervalMs: number;
  /** Deliveries claimed from one lane at a time, at most. */
  claimSize: number;
  /** Lane attempts in flight in this process, over every webhook; lanes take turns for them. */
  maxInFlight: number;
}

/** This process's view of one webhook's lane. */
interface Lane {
  /** Claimed deliveries not yet started. */
  claimed: HeldDelivery[];
  /** The webhook as read with the last claim: an attempt starts with no read of its own, so it takes its slot at once. */
  target: Target | undefined;
  claiming: boolean;
  /**
   * The next claim takes ids above this (0: from the lane's start). A long lane is drained from
   * where the last claim ended; see `claimFrom` for when a claim starts over.
   */
  after: number;
  /** When the next claim starts from the lane's start again (ms). */
  rewindAt: number;
  inFlight: number;
  /** Bumped by every hold: a claim that found the lane empty forgets it only if none came since. */
  holds: number;
  /** Logs that the lane waits (breaker open, paused), at most once a minute. */
  waitingNoticeDue: () => boolean;
}

/**
 * The webhook lanes: deliveries that could not be attempted when they came (their webhook had no
 * room, or a backlog already) wait in Postgres, one lane per webhook (repositories/held-deliveries.ts),
 * and are served here as each webhook has room. Messages of the shared queues are therefore acked
 * at the pace of fan-out, not of the slowest endpoint, and each webhook drains its own backlog at
 * its own pace, up to DISPATCHER_ENDPOINT_CONCURRENCY attempts at once.
 *
 * A lane is served when one of its attempts ends, when its breaker lets a trial through, when its
 * pause ends or its rate lets the next delivery go, when a delivery is held in it, and on every
 * scan. Behind an open breaker, or while the receiver asked to wait, nothing happens at all: no
 * claim, no message, no log line but one a minute; the lane's deliveries wait for the endpoint to
 * answer again, or for the switch-off to drop them. A paced lane (the receiver's pace, the owner's
 * rate limit) is served at its rate. When the process has maxInFlight lane attempts
 * out, the lanes waiting for one take turns (round robin), so many busy webhooks share it fairly.
 */
export class Lanes {
  private readonly store: DeliveryStore;
  private readonly endpoints: Endpoints;
  private readonly deliverer: Deliverer;
  private readonly publisher: Publisher;
  private readonly options: LaneOptions;
  private readonly logger: Logger;
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with deliveries to start when the process has room, in turn order. */
  private readonly turns = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private inFlight = 0;
  private readonly scan: Loop;
  private stopping = false;
  private readonly failureLogDue = atMostEvery(10_000);

  constructor(
    deps: {
      store: DeliveryStore;
      endpoints: Endpoints;
      /** Attempts the lanes' deliveries, and settles their rows. */
      deliverer: Deliverer;
      /** Where the lanes' retries are published: a confirm channel of their own (they hold no message). */
      publisher: Publisher;
      bell: LaneBell;
    },
    options: LaneOptions,
    logger: Logger,
  ) {
    this.store = deps.store;
    this.endpoints = deps.endpoints;
    this.deliverer = deps.deliverer;
    this.publisher = deps.publisher;
    this.options = options;
    this.logger = logger;
    this.scan = new Loop(
      'lanes',
      async () => {
        for (const webhookId of await this.store.lanes()) this.known(webhookId);
        return 0; // on its interval, never back to back
      },
      options.scanIntervalMs,
      logger,
    );
    deps.bell.answeredBy((webhookId, why) =>
      why === 'held' ? this.known(webhookId) : this.serve(webhookId),
    );
  }

  /** Starts looking for lanes other dispatchers filled (a hold here rings at once). */
  start(): void {
    this.scan.start();
  }

  /** The webhook's lane holds deliveries: remember it and serve it. */
  private known(webhookId: string): void {
    let lane = this.lanes.get(webhookId);
    if (!lane) {
      lane = {
        claimed: [],
        target: undefined,
        claiming: false,
        after: 0,
        rewindAt: 0,
        inFlight: 0,
        holds: 0,
        waitingNoticeDue: atMostEvery(60_000),
      };
      this.lanes.set(webhookId, lane);
    }
    lane.holds++;
    this.serve(webhookId);
  }

  /** Starts what the webhook and the process have room for, claiming more when needed. */
  private serve(webhookId: string): void {
    const lane = this.lanes.get(webhookId);
    if (!lane || this.stopping) return;
    if (this.heldBack(webhookId, lane)) return;
    let room = this.endpoints.room(webhookId);
    while (room > 0 && lane.claimed.length > 0) {
      if (this.inFlight >= this.options.maxInFlight) return void this.turns.add(webhookId);
      this.begin(webhookId, lane, lane.claimed.shift()!);
      room--;
    }
    if (this.inFlight >= this.options.maxInFlight) return void this.turns.add(webhookId);
    // Claimed ahead of the free slots, up to a claim's worth waiting, so a busy lane's slots never
    // wait for a claim's round trip; a breaker's trial takes one, and only when it is due; a paced
    // lane claims what its rate lets start soon, so nothing claimed waits out its lease.
    const trial = this.endpoints.isTrial(webhookId);
    const limit = trial ? 1 : this.endpoints.isPaced(webhookId) ? room : this.options.claimSize;
    if (lane.claiming || lane.claimed.length >= limit || (trial && room === 0)) return;
    this.claim(webhookId, lane, limit);
  }

  /**
   * Behind an open breaker, or while the receiver asked to wait, a lane is not served at all:
   * claims would only expire meanwhile, so what this process claimed goes back. The breaker's trial,
   * or the pause's end, rings the lane again.
   */
  private heldBack(webhookId: string, lane: Lane): boolean {
    const open = this.endpoints.isOpen(webhookId);
    const paused = this.endpoints.pausedUntil(webhookId) > Date.now();
    if (!open && !paused) return false;
    for (const held of lane.claimed.splice(0)) void this.store.unclaim(held.id).catch(() => {});
    lane.after = 0;
    if (lane.inFlight === 0 && lane.waitingNoticeDue()) {
      const why = open ? 'the endpoint is failing (breaker open)' : 'the receiver asked to wait';
      this.logger.info({ webhookId }, `deliveries held: ${why}`);
    }
    return true;
  }

  private claim(webhookId: string, lane: Lane, limit: number): void {
    lane.claiming = true;
    const holds = lane.holds;
    const after = this.claimFrom(lane);
    // The webhook is read with each claim, so a changed URL, secret or rate applies from the next few.
    Promise.all([
      this.store.claim(webhookId, limit, this.options.leaseMs, after),
      this.store.target(webhookId),
    ]).then(
      ([claimed, target]) => {
        lane.claiming = false;
        if (this.lanes.get(webhookId) !== lane || this.stopping) {
          // Forgotten meanwhile (dropped, or the process stops): the claims go back.
          for (const held of claimed) void this.store.unclaim(held.id).catch(() => {});
          return;
        }
        if (claimed.length > 0 && (!target || target.disabled_at)) return void this.dropLane(webhookId);
        lane.target = target;
        if (target) this.endpoints.follow(webhookId, target);
        lane.claimed.push(...claimed);
        // A short claim found the end of the lane: the next one starts over from its start.
        lane.after = claimed.length === limit ? Math.max(after, ...claimed.map((held) => held.id)) : 0;
        if (claimed.length > 0 || after > 0) this.serve(webhookId);
        else if (lane.inFlight === 0 && lane.claimed.length === 0 && lane.holds === holds) {
          // Empty, or every delivery in it claimed by other dispatchers: new ones may go straight
          // to the endpoint again. A scan finds the lane again if there is more.
          this.lanes.delete(webhookId);
          this.turns.delete(webhookId);
        }
      },
      (error: unknown) => {
        lane.claiming = false;
        this.logFailure(error, webhookId, 'claiming held deliveries failed; the next scan tries again');
      },
    );
  }

  /**
   * Where the lane's next claim starts: after the last one, so that draining a long lane does not
   * step over every delivery already released (they stay in the index until a vacuum). From the
   * start again once a claim found the end of the lane, when the breaker gave claims back, and at
   * least every scan interval: there wait the rows this cursor passed by, a delivery held by a
   * transaction that committed after a later one's, a retry that has come due, a claim of a
   * dispatcher that died and whose lease has run out.
   */
  private claimFrom(lane: Lane): number {
    const now = Date.now();
    if (lane.after > 0 && now < lane.rewindAt) return lane.after;
    lane.rewindAt = now + this.options.scanIntervalMs;
    return 0;
  }

  private begin(webhookId: string, lane: Lane, held: HeldDelivery): void {
    lane.inFlight++;
    this.inFlight++;
    const work = this.attempt(lane, webhookId, held)
      .catch((error: unknown) =>
        // Left claimed: the lease expires and the delivery is attempted again (at least once).
        this.logFailure(
          error,
          webhookId,
          'a held delivery failed to settle; it is tried again after its claim',
        ),
      )
      .finally(() => {
        lane.inFlight--;
        this.inFlight--;
        this.running.delete(work);
        // Its turn goes to the back of the line of lanes waiting for the process's room.
        this.turns.delete(webhookId);
        if (this.lanes.has(webhookId)) this.turns.add(webhookId);
        for (const next of [...this.turns]) {
          if (this.inFlight >= this.options.maxInFlight) break;
          this.turns.delete(next);
          this.serve(next);
        }
      });
    this.running.add(work);
  }

  private async attempt(lane: Lane, webhookId: string, held: HeldDelivery): Promise<void> {
    const delivery = held.delivery;
    if (!isValid('DeliveryMessage', delivery)) {
      this.logger.error({ webhookId, heldId: held.id }, 'malformed held delivery dropped');
      return this.store.release(held.id);
    }
    // The deliverer settles the row: released, given back, or put back in its place for later.
    await this.deliverer.attempt({
      delivery,
      target: lane.target,
      publisher: this.publisher,
      source: 'lane',
      capturedAt: held.capturedAt,
      heldId: held.id,
    });
  }

  /** The webhook will never be attempted again (deleted, switched off, disabled): its whole lane goes. */
  private dropLane(webhookId: string): void {
    this.forget(webhookId);
    this.store.dropLane(webhookId).then(
      (dropped) =>
        this.logger.info({ webhookId, dropped }, 'held deliveries dropped: webhook deleted or off'),
      (error: unknown) =>
        this.logFailure(error, webhookId, 'dropping a lane failed; the next scan tries again'),
    );
  }

  private forget(webhookId: string): void {
    const lane = this.lanes.get(webhookId);
    if (lane) lane.claimed = [];
    this.lanes.delete(webhookId);
    this.turns.delete(webhookId);
  }

  private logFailure(error: unknown, webhookId: string, message: string): void {
    if (this.failureLogDue()) this.logger.error({ err: error, webhookId }, message);
  }

  /** How many lanes this process knows to hold deliveries (a metric). */
  get size(): number {
    return this.lanes.size;
  }

  /**
   * Stops claiming and lets the attempts in flight settle. Claimed deliveries not yet started go
   * back to their lanes now rather than when their claims expire.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.scan.stop();
    const unstarted = [...this.lanes.values()].flatMap((lane) => lane.claimed.splice(0));
    await Promise.allSettled([...this.running, ...unstarted.map((held) => this.store.unclaim(held.id))]);
  }
}
