import type { WebhookPause } from '@trips/db/webhook-pace';

// The webhook's pace in words (D10), as the settings page and tripctl both say it: the owner's rate
// limit, and the pause a receiver asked for with a 429 or 503.

/** A span of time as owners read it: "700 ms", "2 s". */
const span = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 1000)} s`);

/** "at most 20 deliveries a second", or "none". */
export function describeRateLimit(rateLimit: number | null): string {
  if (rateLimit === null) return 'none';
  return `at most ${rateLimit} ${rateLimit === 1 ? 'delivery' : 'deliveries'} a second`;
}

/**
 * Why the webhook is paused: "the receiver answered 429 with Retry-After 1 s", or, when it gave no
 * Retry-After we could read and the dispatcher chose the pause, "the receiver answered 503 without
 * a Retry-After; we wait 2 s" (the pause's length).
 */
export function describePause(pause: Omit<WebhookPause, 'webhook_id'>): string {
  const answered = `the receiver answered ${pause.status}`;
  if (pause.retry_after_ms !== null) return `${answered} with Retry-After ${span(pause.retry_after_ms)}`;
  const waitMs = pause.paused_until.getTime() - pause.paused_at.getTime();
  return `${answered} without a Retry-After; we wait ${span(Math.max(0, waitMs))}`;
}
