import { createHmac } from 'node:crypto';
import type { Event } from '../openapi-types.ts';

export const SIGNATURE_HEADER = 'service-signature';

/** The HMAC-SHA256 of `<t>.<body>` keyed with the whole secret's UTF-8 bytes (D7). */
export function signatureBytes(secret: string, timestamp: number, body: string | Uint8Array): Buffer {
  // The key is given as the string, which Node encodes as UTF-8: the same bytes as
  // Buffer.from(secret, 'utf8'), but Node 24 sets up an HMAC from a Buffer key several times
  // slower than from a string, and verifying runs this per secret.
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

/** The same signature in hex, as the header's `v1=` carries it. */
function signature(secret: string, timestamp: number, body: string | Uint8Array): string {
  return signatureBytes(secret, timestamp, body).toString('hex');
}

export interface SignedDelivery {
  /** The exact body to send: the signature covers these bytes. */
  body: string;
  /** The headers the dispatcher sends with it (D7). */
  headers: Record<string, string>;
}

/** A delivery of `event` as the dispatcher makes it: same body, headers and signature. */
export function signDelivery(event: Event, secrets: readonly string[], timestamp: number): SignedDelivery {
  const body = JSON.stringify(event);
  const v1 = secrets.map((secret) => `v1=${signature(secret, timestamp, body)}`);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'TripService-Webhooks/1',
      'service-event-id': event.id,
      'service-event-type': event.type,
      [SIGNATURE_HEADER]: [`t=${timestamp}`, ...v1].join(','),
    },
  };
}

/**
 * Signs `event` as a real delivery would be, for a receiver's own tests: post `body` with
 * `headers` to the receiver and its verifyWebhook accepts it. Several secrets give one `v1` each,
 * as during a rotation; `timestamp` (unix seconds, default now) tests the tolerance.
 */
export function signWebhookForTest(
  event: Event,
  secret: string | readonly string[],
  options: { timestamp?: number } = {},
): SignedDelivery {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === ''))
    throw new TypeError('signWebhookForTest: give the webhook secret (whsec_…), or several.');
  return signDelivery(event, secrets, options.timestamp ?? Math.floor(Date.now() / 1000));
}
