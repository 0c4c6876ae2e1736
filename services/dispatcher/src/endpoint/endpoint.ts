import { admit, laneRoom, type DeferReason, type EndpointState } from '../lifecycle.ts';
import type { AttemptResult } from '../sender.ts';
import { Breaker, type BreakerOptions } from './breaker.ts';
import { OwnerRate, type ReserveSendTimes } from './owner-rate.ts';
import { Pace, type PaceOptions } from './pace.ts';
import { Slots } from './slots.ts';

export interface EndpointProtection {
  /** Attempts in flight to one webhook from this process. */
  concurrency: number;
  /**
   * An endpoint whose attempts take longer than this on average is slow: a caller that holds a
   * RabbitMQ message while it attempts (`inline`) is refused, so a slow webhook's attempts never
   * hold the shared queues' messages, and its deliveries wait in its lane instead (lanes.ts).
   */
  inlineMaxMs: number;
  /**
   * How long a caller that holds a RabbitMQ message may wait in memory for a slot of a busy
   * endpoint, at most (0: never). The bound keeps the prefetch moving.
   */
  inlineWaitMs: number;
  breaker: BreakerOptions;
  pace: PaceOptions;
}

/** The webhook as last read, as far as its pace goes. */
export interface PaceOfTarget {
  /** The owner's rate limit, deliveries a second; null: none. */
  rate_limit: number | null;
  /** The shared pause's end (ms, this process's clock); null: not paused. */
  paused_until: number | null;
}

export type GuardedResult =
  /** Attempted; `pause`: the answer asked to wait, until then, and whether that was news here. */
  (
    | { attempted: AttemptResult; pause?: { until: number; longer: boolean } }
    | { deferred: DeferReason; until?: number }
  ) & {
    /** How long it waited in memory for a slot (the line, slots.ts), ms; absent when it did not. */
    lineWaitMs?: number;
  };

/** A lane attempt waits for its send time in memory when it is this close, at most. */
const LANE_HORIZON_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One webhook's endpoint in this process: its slots, its breaker, the receiver's pace and the
 * owner's rate, composed. Whether a delivery starts now is asked of lifecycle.ts; this carries the
 * answer out and keeps the state the answers come from.
 */
export class Endpoint {
  private readonly protection: EndpointProtection;
  private readonly slots: Slots;
  private readonly breaker: Breaker;
  private readonly pace: Pace;
  private readonly ownerRate: OwnerRate;
  private readonly onRoom: () => void;
  /** The shared pause, as the webhook was last read (ms, this process's clock). */
  private sharedPauseUntil = 0;
  private wake: { at: number; timer: NodeJS.Timeout } | undefined;
  lastUsed = Date.now();

  constructor(protection: EndpointProtection, reserve: ReserveSendTimes, onRoom: () => void) {
    this.protection = protection;
    this.onRoom = onRoom;
    this.slots = new Slots({
      concurrency: protection.concurrency,
      inlineWaitMs: protection.inlineWaitMs,
      onRoom,
    });
    // A trial is due: the lane's next delivery is it.
    this.breaker = new Breaker(protection.breaker, onRoom);
    this.pace = new Pace(protection.pace);
    this.ownerRate = new OwnerRate(reserve);
  }

  /**
   * What the webhook's latest read says of its pace: the owner's limit, the shared pause. A pause
   * only ever grows (webhook-pace.ts), so a read from before one told of cannot shorten it.
   */
  follow(target: PaceOfTarget): void {
    this.ownerRate.follow(target.rate_limit);
    this.sharedPauseUntil = Math.max(this.sharedPauseUntil, target.paused_until ?? 0);
  }

  /** A pause shared by another dispatcher: those in the line go to the lane, which waits it out. */
  pauseShared(until: number): void {
    if (until <= this.sharedPauseUntil) return;
    this.sharedPauseUntil = until;
    this.slots.clearLine();
    this.wakeAt(until);
  }

  get idle(): boolean {
    return this.slots.idle && this.pace.settled(Date.now()) && this.sharedPauseUntil < Date.now();
  }

  get open(): boolean {
    return this.breaker.open;
  }

  get trial(): boolean {
    return this.breaker.trial;
  }

  /** Whether a rate applies: the receiver's pace, or the owner's limit. */
  get paced(): boolean {
    return this.pace.paced(Date.now()) || this.ownerRate.limit !== undefined;
  }

  /** The pause in force: the later of this process's and the shared one. */
  get pausedUntil(): number {
    return Math.max(this.pace.pausedUntil, this.sharedPauseUntil);
  }

  state(now: number): EndpointState {
    const trial = this.breaker.trial;
    const ownerTime = this.ownerRate.limit === undefined ? now : (this.ownerRate.firstTime(now) ?? Infinity);
    return {
      now,
      pausedUntil: this.pausedUntil,
      breakerAdmits: this.breaker.admits && (!trial || this.slots.idle),
      slow: (this.slots.meanDurationMs ?? 0) > this.protection.inlineMaxMs,
      paced: this.paced,
      sendAt: Math.max(this.pace.sendAt(now), ownerTime),
      allowed: Math.min(
        this.pace.allowedWithin(now, LANE_HORIZON_MS),
        this.ownerRate.limit === undefined ? Infinity : this.ownerRate.allowedWithin(now, LANE_HORIZON_MS),
      ),
      freeSlots: trial ? (this.slots.idle ? 1 : 0) : this.slots.free,
      lineHasRoom: this.slots.lineHasRoom,
    };
  }

  /**
   * How many lane deliveries could start now. When the answer is none for a reason that passes by
   * itself (a pause, a rate), the lane is told again when it has: a wake-up is set, and send times
   * of the owner's limit are reserved.
   */
  room(now: number): number {
    const state = this.state(now);
    const room = laneRoom(state);
    if (room > 0) return room;
    if (now < state.pausedUntil) this.wakeAt(state.pausedUntil);
    else if (state.breakerAdmits && state.freeSlots > 0) this.awaitSendTimes(now);
    return 0;
  }

  async run(send: () => Promise<AttemptResult>, inline: boolean): Promise<GuardedResult> {
    this.lastUsed = Date.now();
    // A lane attempt of a limited webhook needs a send time in hand; without Postgres it has none,
    // and waits in the lane.
    if (!inline && this.ownerRate.limit !== undefined)
      await this.ownerRate.replenish(Date.now(), 1).catch(() => {});
    const admission = admit(this.state(Date.now()), inline, LANE_HORIZON_MS);
    if (admission.kind === 'wait_in_lane') return { deferred: admission.reason, until: admission.until };
    let lineWaitMs: number | undefined;
    if (admission.kind === 'wait_in_memory') {
      const since = performance.now();
      const gotSlot = await this.slots.waitInLine();
      lineWaitMs = performance.now() - since;
      if (!gotSlot) return { deferred: 'endpoint_busy', lineWaitMs };
    } else {
      this.slots.take();
      const at = this.takeSendTime(admission.at);
      if (at > Date.now()) await sleep(at - Date.now());
      // The receiver may have asked to wait meanwhile.
      if (Date.now() < this.pausedUntil) {
        this.slots.release();
        return { deferred: 'paused', until: this.pausedUntil };
      }
      // A busy process woke up late: sent now, it would crowd the owner's next send times.
      if (this.ownerRate.tooLate(at, Date.now())) {
        this.slots.release();
        return { deferred: 'paced' };
      }
    }
    const sentAt = this.slots.sending();
    try {
      const result = await this.breaker.fire(send);
      if (!result) return { deferred: 'circuit_open', lineWaitMs };
      return { attempted: result, lineWaitMs, ...this.observe(performance.now() - sentAt, result) };
    } finally {
      this.slots.release(sentAt);
    }
  }

  /** Takes the send time the admission was given from each rate that applies; answers the later. */
  private takeSendTime(at: number): number {
    const owner = this.ownerRate.limit === undefined ? at : (this.ownerRate.take(Date.now()) ?? at);
    return Math.max(this.pace.take(at), owner);
  }

  /** What an answer says of the endpoint; answers the pause it asked for, if any. */
  private observe(durationMs: number, result: AttemptResult): { pause?: { until: number; longer: boolean } } {
    const now = Date.now();
    const slowDown = result.backPressure !== undefined;
    this.slots.observe(durationMs, {
      answered: result.statusCode !== null,
      bodyCut: result.bodyCut === true,
      slowDown,
    });
    if (result.error === null) this.pace.delivered(now);
    if (!result.backPressure) return {};
    const pause = this.pace.askedToWait(now, result.at.getTime(), result.backPressure.retryAfterMs);
    // Those waiting for a slot in memory go to the lane, due when the pause ends.
    this.slots.clearLine();
    this.wakeAt(pause.until);
    return { pause };
  }

  /** The owner's limit has no send time in hand soon: reserve some, and serve the lane when due. */
  private awaitSendTimes(now: number): void {
    if (this.ownerRate.limit !== undefined) {
      void this.ownerRate.replenish(now, 1).then(
        () => this.wakeAt((this.ownerRate.firstTime(Date.now()) ?? Date.now()) - LANE_HORIZON_MS),
        () => this.wakeAt(Date.now() + 1_000), // Postgres away: try again in a while
      );
    }
    const sendAt = this.pace.sendAt(now);
    if (sendAt > now) this.wakeAt(sendAt - LANE_HORIZON_MS);
  }

  /** Tells the lane there is room at `at` (the earliest wake-up asked for wins). */
  private wakeAt(at: number): void {
    if (this.wake && this.wake.at <= at && this.wake.at > Date.now()) return;
    if (this.wake) clearTimeout(this.wake.timer);
    const timer = setTimeout(
      () => {
        this.wake = undefined;
        this.onRoom();
      },
      Math.max(0, at - Date.now()),
    );
    this.wake = { at, timer };
  }

  shutdown(): void {
    if (this.wake) clearTimeout(this.wake.timer);
    this.slots.clearLine();
    this.breaker.shutdown();
  }
}
