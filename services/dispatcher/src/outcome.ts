import type { DeferReason } from './endpoints.ts';
import type { AttemptResult } from './sender.ts';

// In a module of its own, so that the deliverer, its metrics and its tracing all read it without
// importing one another.

/** Every way a delivery can end, one handler each (architecture example 5). */
export type Outcome =
  | { kind: 'delivered'; result: AttemptResult }
  | { kind: 'retry_scheduled'; result: AttemptResult; delayMs: number }
  | { kind: 'gave_up'; result: AttemptResult }
  /** Put in its webhook's lane, to be attempted when the webhook has room. Not an attempt. */
  | { kind: 'held'; reason: DeferReason }
  /** Claimed from its lane but not attempted after all (the breaker opened): it stays in the lane. */
  | { kind: 'deferred'; reason: DeferReason }
  | { kind: 'dropped'; reason: 'webhook_gone' | 'webhook_off' | 'unsubscribed' };
