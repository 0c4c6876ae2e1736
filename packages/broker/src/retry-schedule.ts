// The retry schedule (spec 6.3, D9), stated once: the dispatcher retries by it and stores each
// attempt's due time, which the settings page and tripctl read (they never work it out again).

/** WEBHOOK_RETRY_DELAYS and WEBHOOK_FAILURE_WINDOW, in milliseconds. */
export interface RetryPolicy {
  retryDelaysMs: readonly number[];
  failureWindowMs: number;
}

export interface Retry {
  delayMs: number;
  /** The delivery's first failure, carried by the retry so the window is measured from it. */
  firstFailedAt: number;
}

/**
 * When to try a failed delivery again: the n-th failure waits the n-th of WEBHOOK_RETRY_DELAYS,
 * the last one repeating, for as long as the next attempt still falls within
 * WEBHOOK_FAILURE_WINDOW of the delivery's first failure. With the defaults: 1m, 5m, 30m, 2h, 6h,
 * then every 24h, which ends after the attempt at 56h36m, the last one inside three days.
 * Answers null when the delivery has had its chances.
 */
export function nextRetry(
  policy: RetryPolicy,
  failedAttempts: number,
  firstFailedAt: number | null,
  failedAt: number,
): Retry | null {
  const first = firstFailedAt ?? failedAt;
  const delays = policy.retryDelaysMs;
  const delayMs = delays[Math.min(failedAttempts, delays.length) - 1]!;
  if (failedAt + delayMs > first + policy.failureWindowMs) return null;
  return { delayMs, firstFailedAt: first };
}
