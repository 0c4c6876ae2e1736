import { nextRetry } from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
import type { DeliveryPolicy } from './config.ts';
import type { AttemptResult } from './sender.ts';

// ---- A delivery's lifecycle, decided in one place ----
//
// A delivery is attempted now, or it waits: in memory (a moment, for a slot of a busy, healthy
// endpoint), in its webhook's lane in Postgres (until the endpoint has room, its pause ends or its
// rate allows), or in a delay queue of RabbitMQ (a failure's retry, on the spec's schedule). Two
// questions decide it, each a function below of the endpoint's state as this process knows it:
// `admit` before an attempt, `followUp` after one. The endpoint's state is kept in endpoint/ (its
// slots, breaker, the receiver's pace, the owner's rate); the deliverer carries out the answers.

/** Why a delivery was not attempted now. It waits in its webhook's lane; it is never dropped. */
export type DeferReason =
  /** The receiver asked us to wait (429, 503), and the pause has not ended. */
  | 'paused'
  /** The breaker is open: most recent attempts failed. */
  | 'circuit_open'
  /** Every slot is taken. */
  | 'endpoint_busy'
  /** Attempts take long: not made while a shared queue's message waits on them. */
  | 'endpoint_slow'
  /** A rate applies (the receiver's pace, the owner's limit): deliveries go out from the lane at it. */
  | 'paced';

/** The endpoint as `admit` reads it, at `now` (ms, this process's clock). */
export interface EndpointState {
  now: number;
  /** Nothing is attempted before then: the later of this process's pause and the shared one. */
  pausedUntil: number;
  /** Whether the breaker lets an attempt through now (closed, or its trial due and no attempt out). */
  breakerAdmits: boolean;
  /** Whether the endpoint's attempts take longer than an inline caller may hold its message. */
  slow: boolean;
  /** Whether a rate applies: the receiver's pace, or the owner's limit. */
  paced: boolean;
  /** The earliest the rates let the next delivery go; Infinity when no send time is in hand yet. */
  sendAt: number;
  /** How many deliveries the rates let start within the lane's horizon (Infinity: no rate). */
  allowed: number;
  freeSlots: number;
  /** Whether an inline caller may wait in the line for a slot. */
  lineHasRoom: boolean;
}

export type Admission =
  /** Attempt at `at` (now, or a moment later by the rate): a slot is the caller's. */
  | { kind: 'attempt'; at: number }
  /** Wait in memory for a slot, for the inline wait at most; the lane if none comes. */
  | { kind: 'wait_in_memory' }
  /** Wait in the webhook's lane, not attempted before `until` when given. */
  | { kind: 'wait_in_lane'; reason: DeferReason; until?: number };

/**
 * Whether a delivery is attempted now, or waits and where. `inline`: the caller holds a RabbitMQ
 * message of a queue every agency shares (fan-out, a retry come back), so it never waits long: at a
 * paused, failing, slow or paced endpoint its delivery goes to the lane, and at a busy one it waits
 * in memory only if the line clears in time. A caller from the lane holds no message: it waits for
 * its send time when that is within `horizonMs`.
 */
export function admit(state: EndpointState, inline: boolean, horizonMs: number): Admission {
  if (state.now < state.pausedUntil)
    return { kind: 'wait_in_lane', reason: 'paused', until: state.pausedUntil };
  if (!state.breakerAdmits) return { kind: 'wait_in_lane', reason: 'circuit_open' };
  if (inline) {
    if (state.slow) return { kind: 'wait_in_lane', reason: 'endpoint_slow' };
    if (state.paced) return { kind: 'wait_in_lane', reason: 'paced' };
    if (state.freeSlots > 0) return { kind: 'attempt', at: state.now };
    if (state.lineHasRoom) return { kind: 'wait_in_memory' };
    return { kind: 'wait_in_lane', reason: 'endpoint_busy' };
  }
  if (state.sendAt > state.now + horizonMs) return { kind: 'wait_in_lane', reason: 'paced' };
  if (state.freeSlots === 0) return { kind: 'wait_in_lane', reason: 'endpoint_busy' };
  return { kind: 'attempt', at: Math.max(state.now, state.sendAt) };
}

/** How many of the lane's deliveries may be claimed now, to start within the lane's horizon. */
export function laneRoom(state: EndpointState): number {
  if (state.now < state.pausedUntil || !state.breakerAdmits) return 0;
  return Math.min(state.freeSlots, state.allowed);
}

export type FollowUp =
  | { kind: 'delivered' }
  /**
   * The receiver asked to wait a short while: the delivery goes back to its place in the lane, due
   * when the pause ends. Not a failure on the retry schedule.
   */
  | { kind: 'wait_in_lane'; until: number; next: DeliveryMessage }
  /** A failure: tried again after the schedule's delay, not before `dueAt`. */
  | { kind: 'wait_in_delay_queue'; delayMs: number; dueAt: number; next: DeliveryMessage }
  /** The retry window has passed. */
  | { kind: 'gave_up' };

/**
 * What follows an attempt (spec 6.3, D10). `pausedUntil`: when the pause the answer asked for ends
 * (a 429 or 503), undefined for any other answer.
 *
 * - A 2xx: delivered.
 * - Asked to wait, for at most `policy.shortPauseMs`: back to the lane, due when the pause ends;
 *   the retry schedule does not move (the attempt is still logged, and counts for the switch-off).
 * - Any other failure, a longer pause included: the schedule's next delay, and never before the
 *   pause ends (the delivery, come back early, waits out the rest in its lane).
 * - Either way, nothing is tried after the retry window of the delivery's first failure.
 */
export function followUp(
  policy: DeliveryPolicy,
  delivery: DeliveryMessage,
  result: AttemptResult,
  pausedUntil: number | undefined,
): FollowUp {
  if (result.error === null) return { kind: 'delivered' };
  const failedAt = result.at.getTime();
  const firstFailedAt = delivery.first_failed_at ?? failedAt;
  const windowEnd = firstFailedAt + policy.failureWindowMs;
  // Delivered messages of older dispatchers carry a field that means nothing now.
  const { busy_deferrals: _, ...rest } = delivery;
  const next = (waits: number): DeliveryMessage => ({
    ...rest,
    attempt: delivery.attempt + 1,
    first_failed_at: firstFailedAt,
    ...(waits > 0 && { waits }),
  });
  const waits = delivery.waits ?? 0;
  if (pausedUntil !== undefined && pausedUntil - failedAt <= policy.shortPauseMs) {
    if (pausedUntil > windowEnd) return { kind: 'gave_up' };
    return { kind: 'wait_in_lane', until: pausedUntil, next: next(waits + 1) };
  }
  // The schedule counts failures, not the attempts the receiver asked to wait for a while.
  const retry = nextRetry(policy, delivery.attempt - waits, firstFailedAt, failedAt);
  if (!retry || (pausedUntil ?? 0) > windowEnd) return { kind: 'gave_up' };
  return {
    kind: 'wait_in_delay_queue',
    delayMs: retry.delayMs,
    dueAt: Math.max(failedAt + retry.delayMs, pausedUntil ?? 0),
    next: next(waits),
  };
}
