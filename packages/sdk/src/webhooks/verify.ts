import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { WebhookVerificationError } from '../errors.ts';
import type { Event } from '../openapi-types.ts';
import { headerValue, type HeadersLike } from './headers.ts';
import { isPublicKey, publicKey, serviceSecret } from './keys.ts';
import { SIGNATURE_HEADER, signatureBytes, STANDARD_HEADERS } from './sign.ts';
import { matchStandardSignature, parseStandardHeaders } from './standard.ts';

export interface VerifyOptions {
  /** How far `t` may be from this machine's clock, either way. Default 300 s (D7). */
  toleranceSeconds?: number;
  /** The clock, in unix seconds; for tests. */
  now?: number;
}

const fail = (reason: ConstructorParameters<typeof WebhookVerificationError>[0], message: string) =>
  new WebhookVerificationError(reason, message);

function rawBytes(rawBody: unknown): Buffer {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (Buffer.isBuffer(rawBody)) return rawBody;
  if (rawBody instanceof Uint8Array)
    return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  const got =
    rawBody === null ? 'null' : typeof rawBody === 'object' ? 'an already parsed object' : typeof rawBody;
  throw fail(
    'body_not_raw',
    `verifyWebhook needs the raw request body (a string or Buffer) exactly as received, but got ${got}. ` +
      'The signature covers the bytes sent; JSON parsed and serialised again is not the same bytes. ' +
      "In Express, use express.raw({ type: 'application/json' }) on this route instead of express.json().",
  );
}

/** The keys a receiver verifies with: the webhook's secrets (either form) and its public keys. */
interface Keys {
  secrets: string[];
  publicKeys: KeyObject[];
}

/** Secrets (whsec_…) and public keys (whpk_…), one or a list; anything else is a setup error. */
export function keyList(keys: unknown): Keys {
  const list = typeof keys === 'string' ? [keys] : Array.isArray(keys) ? keys : [];
  if (list.length === 0 || list.some((s) => typeof s !== 'string' || s === ''))
    throw new TypeError(
      `verifyWebhook: secrets must be the webhook's secret (whsec_…) or public key (whpk_…), or a list of them; got ${keys === undefined ? 'undefined (is the environment variable set?)' : typeof keys}.`,
    );
  const strings = list as string[];
  return {
    secrets: strings.filter((key) => !isPublicKey(key)),
    publicKeys: strings.filter(isPublicKey).map(publicKey),
  };
}

/** `t=<unix seconds>,v1=<hex>[,v1=…]`; other schemes are ignored, so a future v2 does not break it. */
function parseHeader(header: string): { timestamp: number; v1: Buffer[] } {
  let timestamp: number | undefined;
  const v1: Buffer[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 1)
      throw fail(
        'malformed_header',
        `Service-Signature has a part without a key=value form: '${part.trim().slice(0, 40)}'.`,
      );
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined) throw fail('malformed_header', 'Service-Signature has more than one t=.');
      if (!/^\d{1,12}$/.test(value))
        throw fail('malformed_header', 'Service-Signature t= is not a unix time in seconds.');
      timestamp = Number(value);
    } else if (key === 'v1') {
      // Decoding stops at the first character that is not hex, so 32 bytes from 64 characters
      // means all 64 were hex digits.
      const bytes = value.length === 64 ? Buffer.from(value, 'hex') : undefined;
      if (bytes?.length !== 32) throw fail('malformed_header', 'Service-Signature v1= is not 64 hex digits.');
      v1.push(bytes);
    }
  }
  if (timestamp === undefined)
    throw fail('malformed_header', 'Service-Signature has no t= (the time of the attempt).');
  if (v1.length === 0) throw fail('malformed_header', 'Service-Signature has no v1= signature.');
  return { timestamp, v1 };
}

function parseEvent(bytes: Buffer): Event {
  let event: unknown;
  try {
    event = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw fail('invalid_body', 'The body is signed correctly but is not JSON.');
  }
  const e = event as Partial<Event> | null;
  if (!e || e.object !== 'event' || typeof e.id !== 'string' || typeof e.type !== 'string')
    throw fail('invalid_body', 'The body is signed correctly but is not an event record.');
  return e as Event;
}

function checkTime(timestamp: number, options: VerifyOptions): void {
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (now - timestamp > tolerance)
    throw fail(
      'timestamp_too_old',
      `The signature's time is ${now - timestamp} s old, more than the ${tolerance} s allowed: a replay, or this machine's clock is wrong.`,
    );
  if (timestamp - now > tolerance)
    throw fail(
      'timestamp_in_future',
      `The signature's time is ${timestamp - now} s ahead of this machine's clock, more than the ${tolerance} s allowed.`,
    );
}

/** Service-Signature (D7): any `v1=` matching the body with one of the secrets. */
function verifyServiceSignature(bytes: Buffer, header: string, secrets: string[], options: VerifyOptions) {
  const { timestamp, v1 } = parseHeader(header);
  checkTime(timestamp, options);
  const expected = secrets.map((secret) => signatureBytes(serviceSecret(secret), timestamp, bytes));
  // Every pair is compared, matching or not, so the time taken does not tell which one matched.
  let matched = false;
  for (const given of v1) for (const wanted of expected) matched = timingSafeEqual(given, wanted) || matched;
  if (!matched)
    throw fail(
      'no_matching_signature',
      'No v1 signature matches this body with the given secret(s): a wrong secret, or a body changed on the way.',
    );
}

const present = (value: string | undefined): value is string => value !== undefined && value.trim() !== '';

/**
 * Checks a webhook delivery and returns its event, or throws a WebhookVerificationError whose
 * `reason` names the check that failed. Pass the raw body, the request's headers and the
 * webhook's secret (`whsec_…`, in either of the forms API settings shows), or its public key
 * (`whpk_…`) when the webhook signs with ed25519; during a rotation pass both. A delivery carries
 * two header sets: Service-Signature is checked with secrets, and the Standard Webhooks set
 * (webhook-signature) when a public key is given or Service-Signature is absent. Comparisons are
 * constant-time.
 */
export function verifyWebhook(
  rawBody: string | Buffer | Uint8Array,
  headers: HeadersLike,
  secrets: string | readonly string[],
  options: VerifyOptions = {},
): Event {
  const bytes = rawBytes(rawBody);
  const keys = keyList(secrets);
  const service = headerValue(headers, SIGNATURE_HEADER);
  const standard = headerValue(headers, STANDARD_HEADERS.signature);
  if (keys.publicKeys.length === 0 && present(service)) {
    verifyServiceSignature(bytes, service, keys.secrets, options);
  } else if (present(standard)) {
    const parsed = parseStandardHeaders(headers, standard);
    checkTime(parsed.timestamp, options);
    matchStandardSignature(parsed, bytes, keys.secrets, keys.publicKeys);
  } else {
    throw fail(
      'missing_header',
      keys.publicKeys.length > 0
        ? 'No webhook-signature header: a public key (whpk_…) verifies only its v1a signatures. Did this request come from the trip service?'
        : 'No Service-Signature or webhook-signature header: this request did not come from the trip service.',
    );
  }
  return parseEvent(bytes);
}
