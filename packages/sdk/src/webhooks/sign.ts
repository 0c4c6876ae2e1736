import { createHmac, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Event } from '../openapi-types.ts';
import { publicKeyText, secretBytes, serviceSecret } from './keys.ts';

// How the service signs a delivery (its decisions D7 and D11). The service's own copy is
// packages/contracts/src/webhook-signing.ts; this package ships alone, so it has this one, and
// test/sdk/signing-copies.test.ts proves the two sign alike.

export const SIGNATURE_HEADER = 'service-signature';
export const STANDARD_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
};

/** Service-Signature's HMAC-SHA256 of `<t>.<body>`, keyed with the whole secret's UTF-8 bytes (D7). */
export function signatureBytes(secret: string, timestamp: number, body: string | Uint8Array): Buffer {
  // The key is given as the string, which Node encodes as UTF-8: the same bytes as
  // Buffer.from(secret, 'utf8'), but Node 24 sets up an HMAC from a Buffer key several times
  // slower than from a string, and verifying runs this per secret.
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

/** The Standard Webhooks content, `<id>.<timestamp>.<body>`, as bytes. */
export function standardContent(id: string, timestamp: number, body: string | Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), Buffer.from(body)]);
}

/** webhook-signature's `v1`: the HMAC-SHA256 of the content keyed with the secret's 32 bytes (D11). */
export function standardSignatureBytes(secret: string, content: Buffer): Buffer {
  return createHmac('sha256', secretBytes(secret)).update(content).digest();
}

export interface SignedDelivery {
  /** The exact body to send: the signatures cover these bytes. */
  body: string;
  /** The headers the dispatcher sends with it (D7, D11). */
  headers: Record<string, string>;
}

/** A delivery of `event` as the dispatcher makes it: same body, headers and signatures. */
export function signDelivery(
  event: Event,
  secrets: readonly string[],
  timestamp: number,
  ed25519Keys: readonly KeyObject[] = [],
): SignedDelivery {
  const body = JSON.stringify(event);
  const v1 = secrets.map(
    (secret) => `v1=${signatureBytes(serviceSecret(secret), timestamp, body).toString('hex')}`,
  );
  const content = standardContent(event.id, timestamp, body);
  const standard = [
    ...secrets.map((secret) => `v1,${standardSignatureBytes(secret, content).toString('base64')}`),
    ...ed25519Keys.map((key) => `v1a,${sign(null, content, key).toString('base64')}`),
  ];
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'TripService-Webhooks/1',
      'service-event-id': event.id,
      'service-event-type': event.type,
      [SIGNATURE_HEADER]: [`t=${timestamp}`, ...v1].join(','),
      [STANDARD_HEADERS.id]: event.id,
      [STANDARD_HEADERS.timestamp]: String(timestamp),
      [STANDARD_HEADERS.signature]: standard.join(' '),
    },
  };
}

/**
 * Signs `event` as a real delivery would be, for a receiver's own tests: post `body` with
 * `headers` to the receiver and its verifyWebhook accepts it. Several secrets give one signature
 * each, as during a rotation; `timestamp` (unix seconds, default now) tests the tolerance;
 * `ed25519PrivateKey` (from generateTestSigningKey) adds a `v1a` signature, as a webhook switched to
 * ed25519 sends.
 */
export function signWebhookForTest(
  event: Event,
  secret: string | readonly string[],
  options: { timestamp?: number; ed25519PrivateKey?: KeyObject } = {},
): SignedDelivery {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === ''))
    throw new TypeError('signWebhookForTest: give the webhook secret (whsec_…), or several.');
  const keys = options.ed25519PrivateKey ? [options.ed25519PrivateKey] : [];
  return signDelivery(event, secrets, options.timestamp ?? Math.floor(Date.now() / 1000), keys);
}

/**
 * An ed25519 key pair for a receiver's own tests of `v1a`: sign with `privateKey`
 * (signWebhookForTest) and verify with `publicKey`, a `whpk_…` as API settings shows a webhook's.
 */
export function generateTestSigningKey(): { privateKey: KeyObject; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey: publicKeyText(publicKey) };
}
