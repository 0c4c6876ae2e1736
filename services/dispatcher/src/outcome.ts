import type { DeferReason } from './lifecycle.ts';
import type { AttemptResult } from './sender.ts';

// In a module of its own, so that the deliverer, its metrics and its tracing all read it without
// importing one another.

/** Every way a delivery can end, one handler each (deliverer.ts). */
export type Outcome =
  | { kind: 'delivered'; result: AttemptResult }
  /** Failed: tried again after the schedule's delay, not before `dueAt`. */
  | { kind: 'retry_scheduled'; result: AttemptResult; delayMs: number; dueAt: Date }
  /** The receiver asked to wait a short while: back in its lane, due when the pause ends (D10). */
  | { kind: 'asked_to_wait'; result: AttemptResult; until: Date }
  | { kind: 'gave_up'; result: AttemptResult }
  /** Put in its webhook's lane, to be attempted when the webhook may be. Not an attempt. */
  | { kind: 'held'; reason: DeferReason }
  /** Claimed from its lane but not attempted after all (paused, the breaker opened): it stays there. */
  | { kind: 'deferred'; reason: DeferReason }
  | { kind: 'dropped'; reason: 'webhook_gone' | 'webhook_off' | 'unsubscribed' };
