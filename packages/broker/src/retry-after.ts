// A receiver's Retry-After (RFC 9110 10.2.3), read one way by whoever reads it: the dispatcher, which
// waits as it asks (D10), and the settings module, which says what it asked in the delivery log.

/** The answers by which a receiver asks us to wait (D10): a failed attempt that pauses the webhook. */
export const ASKS_TO_WAIT: ReadonlySet<number> = new Set([429, 503]);

/** What a Retry-After asks: whole seconds, or a time (an HTTP date). */
export type RetryAfter = { seconds: number } | { at: Date };

/**
 * A Retry-After's value as seconds or an HTTP date; undefined for anything else, which counts as no
 * Retry-After at all. An HTTP date starts with its weekday (IMF-fixdate, RFC 850, asctime):
 * Date.parse alone would take a bare "12" or "2030" for a date.
 */
export function parseRetryAfter(value: string | undefined): RetryAfter | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return { seconds: Number(text) };
  if (!/^[A-Za-z]{3,9}, .+ GMT$|^[A-Za-z]{3} [A-Za-z]{3} +\d/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : { at: new Date(at) };
}
