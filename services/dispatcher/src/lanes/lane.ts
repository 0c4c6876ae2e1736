import type { HeldDelivery } from '@trips/db/held-deliveries';
import { atMostEvery } from '@trips/runtime';
import type { Target } from '../targets-cache.ts';

/** This process's view of one webhook's lane: what it claimed, and where its next claim starts. */
export class Lane {
  /** Claimed deliveries not yet started. */
  claimed: HeldDelivery[] = [];
  /** The webhook as read with the last claim: an attempt starts with no read of its own, so it takes its slot at once. */
  target: Target | undefined;
  claiming = false;
  inFlight = 0;
  /** Bumped by every hold: a claim that found the lane empty forgets it only if none came since. */
  holds = 0;
  /** Logs that the lane waits (breaker open, paused), at most once a minute. */
  readonly waitingNoticeDue = atMostEvery(60_000);
  /**
   * The next claim takes ids above this (0: from the lane's start). A long lane is drained from
   * where the last claim ended; see `claimFrom` for when a claim starts over.
   */
  private after = 0;
  /** When the next claim starts from the lane's start again (ms). */
  private rewindAt = 0;

  /**
   * Where the lane's next claim starts: after the last one, so that draining a long lane does not
   * step over every delivery already released (they stay in the index until a vacuum). From the
   * start again once a claim found the end of the lane, when its claims were given back, and at
   * least every `rewindMs`: there wait the rows this cursor passed by, a delivery held by a
   * transaction that committed after a later one's, a retry that has come due, a claim of a
   * dispatcher that died and whose lease has run out.
   */
  claimFrom(now: number, rewindMs: number): number {
    if (this.after > 0 && now < this.rewindAt) return this.after;
    this.rewindAt = now + rewindMs;
    return 0;
  }

  /** A claim from `after` of at most `limit` came back: a short one found the lane's end. */
  claimedFrom(after: number, limit: number, got: HeldDelivery[]): void {
    this.claimed.push(...got);
    this.after = got.length === limit ? Math.max(after, ...got.map((held) => held.id)) : 0;
  }

  /** Gives up what it claimed and has not started: the caller gives the rows back. */
  takeUnstarted(): HeldDelivery[] {
    this.after = 0;
    return this.claimed.splice(0);
  }

  /** Whether it holds nothing: none claimed, none in flight, no hold since `holds`. */
  emptySince(holds: number): boolean {
    return this.inFlight === 0 && this.claimed.length === 0 && this.holds === holds;
  }
}
