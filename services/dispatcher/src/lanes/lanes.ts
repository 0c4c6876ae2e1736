import type { Publisher } from '@trips/broker/client';
import { isValid } from '@trips/contracts';
import type { HeldDelivery } from '@trips/db/held-deliveries';
import { atMostEvery, Loop, type Logger } from '@trips/runtime';
import type { Deliverer } from '../deliverer.ts';
import type { Endpoints } from '../endpoint/endpoints.ts';
import type { DeliveryStore } from '../store.ts';
import type { LaneBell } from './bell.ts';
import { Lane } from './lane.ts';
import { LaneTurns } from './turns.ts';

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
/** What the lanes work with, given at construction. */
export interface LanesDeps {
  store: DeliveryStore;
  endpoints: Endpoints;
  /** Attempts the lanes' deliveries, and settles their rows. */
  deliverer: Deliverer;
  /** Where the lanes' retries are published: a confirm channel of their own (they hold no message). */
  publisher: Publisher;
  bell: LaneBell;
}

export class Lanes {
  private readonly deps: LanesDeps;
  private readonly options: LaneOptions;
  private readonly logger: Logger;
  private readonly lanes = new Map<string, Lane>();
  private readonly turns: LaneTurns;
  private readonly running = new Set<Promise<void>>();
  private readonly scan: Loop;
  private stopping = false;
  private readonly failureLogDue = atMostEvery(10_000);

  constructor(deps: LanesDeps, options: LaneOptions, logger: Logger) {
    this.deps = deps;
    this.options = options;
    this.logger = logger;
    this.turns = new LaneTurns(options.maxInFlight);
    const findLanes = async () => {
      for (const webhookId of await deps.store.lanes()) this.known(webhookId);
      return 0; // on its interval, never back to back
    };
    this.scan = new Loop('lanes', findLanes, options.scanIntervalMs, logger);
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
    if (!lane) this.lanes.set(webhookId, (lane = new Lane()));
    lane.holds++;
    this.serve(webhookId);
  }

  /** Starts what the webhook and the process have room for, claiming more when needed. */
  private serve(webhookId: string): void {
    const lane = this.lanes.get(webhookId);
    if (!lane || this.stopping) return;
    if (this.heldBack(webhookId, lane)) return;
    let room = this.deps.endpoints.room(webhookId);
    while (room > 0 && lane.claimed.length > 0) {
      if (this.turns.full) return this.turns.wait(webhookId);
      this.begin(webhookId, lane, lane.claimed.shift()!);
      room--;
    }
    if (this.turns.full) return this.turns.wait(webhookId);
    // Claimed ahead of the free slots, up to a claim's worth waiting, so a busy lane's slots never
    // wait for a claim's round trip; a breaker's trial takes one, and only when it is due; a paced
    // lane claims what its rate lets start soon, so nothing claimed waits out its lease.
    const trial = this.deps.endpoints.isTrial(webhookId);
    const limit = trial ? 1 : this.deps.endpoints.isPaced(webhookId) ? room : this.options.claimSize;
    if (lane.claiming || lane.claimed.length >= limit || (trial && room === 0)) return;
    this.claim(webhookId, lane, limit);
  }

  /**
   * Behind an open breaker, or while the receiver asked to wait, a lane is not served at all:
   * claims would only expire meanwhile, so what this process claimed goes back. The breaker's trial,
   * or the pause's end, rings the lane again.
   */
  private heldBack(webhookId: string, lane: Lane): boolean {
    const open = this.deps.endpoints.isOpen(webhookId);
    const paused = this.deps.endpoints.pausedUntil(webhookId) > Date.now();
    if (!open && !paused) return false;
    for (const held of lane.takeUnstarted()) void this.deps.store.unclaim(held.id).catch(() => {});
    if (lane.inFlight === 0 && lane.waitingNoticeDue()) {
      const why = open ? 'the endpoint is failing (breaker open)' : 'the receiver asked to wait';
      this.logger.info({ webhookId }, `deliveries held: ${why}`);
    }
    return true;
  }

  private claim(webhookId: string, lane: Lane, limit: number): void {
    lane.claiming = true;
    const holds = lane.holds;
    const after = lane.claimFrom(Date.now(), this.options.scanIntervalMs);
    // The webhook is read with each claim, so a changed URL, secret or rate applies from the next few.
    Promise.all([
      this.deps.store.claim(webhookId, limit, this.options.leaseMs, after),
      this.deps.store.target(webhookId),
    ]).then(
      ([claimed, target]) => {
        lane.claiming = false;
        if (this.lanes.get(webhookId) !== lane || this.stopping) {
          // Forgotten meanwhile (dropped, or the process stops): the claims go back.
          for (const held of claimed) void this.deps.store.unclaim(held.id).catch(() => {});
          return;
        }
        if (claimed.length > 0 && (!target || target.disabled_at)) return void this.dropLane(webhookId);
        lane.target = target;
        if (target) this.deps.endpoints.follow(webhookId, target);
        lane.claimedFrom(after, limit, claimed);
        if (claimed.length > 0 || after > 0) this.serve(webhookId);
        // Empty, or every delivery in it claimed by other dispatchers: new ones may go straight to
        // the endpoint again. A scan finds the lane again if there is more.
        else if (lane.emptySince(holds)) this.forget(webhookId);
      },
      (error: unknown) => {
        lane.claiming = false;
        this.logFailure(error, webhookId, 'claiming held deliveries failed; the next scan tries again');
      },
    );
  }

  private begin(webhookId: string, lane: Lane, held: HeldDelivery): void {
    lane.inFlight++;
    this.turns.started();
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
        this.running.delete(work);
        // Its turn goes to the back of the line of lanes waiting for the process's room.
        this.turns.ended(webhookId, this.lanes.has(webhookId));
        for (const next of this.turns.due()) this.serve(next);
      });
    this.running.add(work);
  }

  private async attempt(lane: Lane, webhookId: string, held: HeldDelivery): Promise<void> {
    const delivery = held.delivery;
    if (!isValid('DeliveryMessage', delivery)) {
      this.logger.error({ webhookId, heldId: held.id }, 'malformed held delivery dropped');
      return this.deps.store.release(held.id);
    }
    // The deliverer settles the row: released, given back, or put back in its place for later.
    await this.deps.deliverer.attempt({
      delivery,
      target: lane.target,
      publisher: this.deps.publisher,
      source: 'lane',
      capturedAt: held.capturedAt,
      heldId: held.id,
    });
  }

  /** The webhook will never be attempted again (deleted, switched off, disabled): its whole lane goes. */
  private dropLane(webhookId: string): void {
    this.forget(webhookId);
    this.deps.store.dropLane(webhookId).then(
      (dropped) =>
        this.logger.info({ webhookId, dropped }, 'held deliveries dropped: webhook deleted or off'),
      (error: unknown) =>
        this.logFailure(error, webhookId, 'dropping a lane failed; the next scan tries again'),
    );
  }

  private forget(webhookId: string): void {
    this.lanes.get(webhookId)?.claimed.splice(0);
    this.lanes.delete(webhookId);
    this.turns.forget(webhookId);
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
    await Promise.allSettled([...this.running, ...unstarted.map((held) => this.deps.store.unclaim(held.id))]);
  }
}
