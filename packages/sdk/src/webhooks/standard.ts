import { timingSafeEqual, verify, type KeyObject } from 'node:crypto';
import { WebhookVerificationError } from '../errors.ts';
import { headerValue, type HeadersLike } from './headers.ts';
import { STANDARD_HEADERS, standardContent, standardSignatureBytes } from './sign.ts';

// The Standard Webhooks header set (the service's decision D11): webhook-id, webhook-timestamp and
// webhook-signature, `v1,<base64 HMAC-SHA256>` per secret and `v1a,<base64 ed25519>` per key,
// space-separated, over `<id>.<timestamp>.<raw body>`.

const fail = (reason: ConstructorParameters<typeof WebhookVerificationError>[0], message: string) =>
  new WebhookVerificationError(reason, message);

interface StandardHeaders {
  id: string;
  timestamp: number;
  v1: Buffer[];
  v1a: Buffer[];
}

/** The three headers, read and checked for form; other signature versions are ignored, as the specification says. */
export function parseStandardHeaders(headers: HeadersLike, signature: string): StandardHeaders {
  const id = headerValue(headers, STANDARD_HEADERS.id)?.trim();
  if (!id) throw fail('malformed_header', 'webhook-signature came without webhook-id, which it signs.');
  const time = headerValue(headers, STANDARD_HEADERS.timestamp)?.trim() ?? '';
  if (!/^\d{1,12}$/.test(time))
    throw fail('malformed_header', 'webhook-timestamp is missing or not a unix time in seconds.');
  const v1: Buffer[] = [];
  const v1a: Buffer[] = [];
  for (const entry of signature.split(' ').filter(Boolean)) {
    const comma = entry.indexOf(',');
    if (comma < 1)
      throw fail(
        'malformed_header',
        `webhook-signature has an entry without a version: '${entry.slice(0, 40)}'.`,
      );
    const [version, value] = [entry.slice(0, comma), entry.slice(comma + 1)];
    // Standard base64 of exactly 32 (v1) or 64 (v1a) bytes, padding included.
    if (version === 'v1') {
      if (!/^[A-Za-z0-9+/]{43}=$/.test(value))
        throw fail('malformed_header', 'webhook-signature has a v1 that is not 32 bytes in base64.');
      v1.push(Buffer.from(value, 'base64'));
    } else if (version === 'v1a') {
      if (!/^[A-Za-z0-9+/]{86}==$/.test(value))
        throw fail('malformed_header', 'webhook-signature has a v1a that is not 64 bytes in base64.');
      v1a.push(Buffer.from(value, 'base64'));
    }
  }
  if (v1.length + v1a.length === 0)
    throw fail('malformed_header', 'webhook-signature has no v1 or v1a signature.');
  return { id, timestamp: Number(time), v1, v1a };
}

/**
 * Whether any signature of the header matches the body: a `v1` with one of the secrets, a `v1a`
 * with one of the public keys. Every pair is tried, matching or not, so the time taken does not
 * tell which one matched.
 */
export function matchStandardSignature(
  parsed: StandardHeaders,
  bytes: Buffer,
  secrets: readonly string[],
  publicKeys: readonly KeyObject[],
): void {
  const content = standardContent(parsed.id, parsed.timestamp, bytes);
  let matched = false;
  for (const secret of secrets) {
    const wanted = standardSignatureBytes(secret, content);
    for (const given of parsed.v1) matched = timingSafeEqual(given, wanted) || matched;
  }
  for (const key of publicKeys)
    for (const given of parsed.v1a) matched = verify(null, content, key, given) || matched;
  if (matched) return;
  if (publicKeys.length > 0 && parsed.v1a.length === 0)
    throw fail(
      'no_matching_signature',
      'webhook-signature carries no v1a (ed25519) signature: switch the webhook to ed25519 signatures in API settings, or verify with its secret.',
    );
  throw fail(
    'no_matching_signature',
    'No webhook-signature entry matches this body with the given secret(s) or public key(s): a wrong key, or a body changed on the way.',
  );
}
