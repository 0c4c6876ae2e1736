/**
 * Anything shaped like one of our credentials: an API key (`tps_`, D2) or a webhook signing secret
 * (`whsec_`, D7). Session tokens and the keys of values shown once travel only in cookies, never
 * in a URL. A client may paste a key anywhere, a path included (`GET /api/v1/trips/tps_…`), and a
 * path is logged.
 */
const CREDENTIAL = /(tps_|whsec_)[A-Za-z0-9_-]+/g;

/**
 * A path (or any text from a client) as a log may hold it: each credential's prefix kept, so a
 * reader sees what was pasted, and the rest never written. Almost no path holds either prefix: it
 * costs two searches, not a replace.
 */
export function redactCredentials(text: string): string {
  if (!text.includes('tps_') && !text.includes('whsec_')) return text;
  return text.replace(CREDENTIAL, '$1…[redacted]');
}
