import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';

// How a delivery is signed (decisions.md D7 and D11): the one place the dispatcher, the settings
// module, the benchmarks and the tests sign or make keys. The SDK, which ships alone, has its own
// copy (packages/sdk/src/webhooks/sign.ts); test/sdk/signing-copies.test.ts proves
// the two make the same headers.

/** D7: what every webhook secret starts with. */
export const SECRET_PREFIX = 'whsec_';
/** D11: what a webhook's ed25519 public key starts with, as Standard Webhooks names it. */
export const PUBLIC_KEY_PREFIX = 'whpk_';

/**
 * The secret's key bytes for Standard Webhooks (D11): what follows `whsec_`, base64-decoded. D7
 * writes it in base64url, the Standard Webhooks libraries take standard base64; Node decodes both.
 */
export function secretBytes(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

/**
 * The same secret as the Standard Webhooks libraries take it: `whsec_` and its bytes in standard
 * base64, padded. Shown beside the secret wherever the secret is shown (docs/webhooks.md, "Secrets").
 */
export function standardWebhooksSecret(secret: string): string {
  return `${SECRET_PREFIX}${secretBytes(secret).toString('base64')}`;
}

/**
 * HMAC keys of the secrets seen lately. Node sets an HMAC up from a KeyObject as fast as from a
 * string, and several times slower from a Buffer; a KeyObject made per delivery would cost as much
 * again. Emptied whenever it grows past its bound, so rotated and deleted secrets do not pile up.
 */
const hmacKeys = new Map<string, KeyObject>();
const HMAC_KEYS_KEPT = 10_000;

function hmacKey(secret: string): KeyObject {
  let key = hmacKeys.get(secret);
  if (!key) {
    if (hmacKeys.size >= HMAC_KEYS_KEPT) hmacKeys.clear();
    key = createSecretKey(secretBytes(secret));
    hmacKeys.set(secret, key);
  }
  return key;
}

/**
 * D7's `Service-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256>`, one `v1=` per secret that
 * signs now (two while a rotation overlaps). The HMAC key is the UTF-8 bytes of the whole secret
 * string, `whsec_` included; the message is `<t>.<raw body>`. (Node encodes a string key as UTF-8.)
 */
export function serviceSignature(body: string, secrets: readonly string[], timestamp: number): string {
  const signed = `${timestamp}.${body}`;
  const v1 = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`);
  return [`t=${timestamp}`, ...v1].join(',');
}

/**
 * What makes the ed25519 signature (RFC 8032) of a message with one private key. A function rather
 * than a key, so that the dispatcher can sign with libsodium (services/dispatcher/src/sodium-signer.ts)
 * while everything else signs with Node's crypto (nodeEd25519Signer) and this module stays free of
 * native add-ons. ed25519 is deterministic: both give the very same signature.
 */
export type Ed25519Signer = (message: Buffer) => Buffer;

/** The signer of an ed25519 private key with Node's crypto (OpenSSL). */
export function nodeEd25519Signer(privateKey: KeyObject): Ed25519Signer {
  return (message) => sign(null, message, privateKey);
}

/**
 * D11's `webhook-signature`: over `<id>.<timestamp>.<raw body>`, `v1,<base64 HMAC-SHA256>` keyed by
 * each secret's bytes, then `v1a,<base64 ed25519 signature>` per signing key, space-separated.
 */
export function standardSignature(
  id: string,
  timestamp: number,
  body: string,
  secrets: readonly string[],
  ed25519: readonly Ed25519Signer[] = [],
): string {
  const signed = `${id}.${timestamp}.${body}`;
  const v1 = secrets.map(
    (secret) => `v1,${createHmac('sha256', hmacKey(secret)).update(signed).digest('base64')}`,
  );
  if (ed25519.length === 0) return v1.join(' ');
  const bytes = Buffer.from(signed, 'utf8');
  const v1a = ed25519.map((signer) => `v1a,${signer(bytes).toString('base64')}`);
  return [...v1, ...v1a].join(' ');
}

/** What signs a delivery: the webhook's secrets signing now and, when switched on, its ed25519 keys. */
export interface SigningKeys {
  /** Newest first: two while a rotation overlaps. */
  secrets: readonly string[];
  /** Signers of the private keys, newest first; none unless the owner switched ed25519 on. */
  ed25519?: readonly Ed25519Signer[];
}

/** The signing headers of one attempt (D7, D11): both header sets, at the same second. */
export interface SignatureHeaders {
  'service-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** Every signing header of an attempt of the event `eventId` whose body is `body`, signed at `timestamp`. */
export function signatureHeaders(
  eventId: string,
  body: string,
  timestamp: number,
  keys: SigningKeys,
): SignatureHeaders {
  return {
    'service-signature': serviceSignature(body, keys.secrets, timestamp),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(eventId, timestamp, body, keys.secrets, keys.ed25519),
  };
}

/** An ed25519 public key as shown to owners: `whpk_` and its 32 raw bytes (RFC 8032) in standard base64. */
export function publicKeyText(key: KeyObject): string {
  const { x } = key.export({ format: 'jwk' });
  return `${PUBLIC_KEY_PREFIX}${Buffer.from(x!, 'base64url').toString('base64')}`;
}

/** The public key a `whpk_…` text names; throws when it is not one. */
export function publicKeyFromText(text: string): KeyObject {
  const raw = text.startsWith(PUBLIC_KEY_PREFIX)
    ? Buffer.from(text.slice(PUBLIC_KEY_PREFIX.length), 'base64')
    : undefined;
  if (raw?.length !== 32)
    throw new TypeError(`not an ed25519 public key (${PUBLIC_KEY_PREFIX}…): ${text.slice(0, 12)}…`);
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
}

/** A new ed25519 key pair for a webhook: the public key as shown, the private key as PKCS #8 DER. */
export function generateSigningKeyPair(): { publicKey: string; privateKey: Buffer } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKey: publicKeyText(publicKey),
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }),
  };
}

/** The private key of a pair made by generateSigningKeyPair, ready to sign. */
export function signingPrivateKey(pkcs8: Buffer): KeyObject {
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}
