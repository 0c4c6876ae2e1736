import { createPublicKey, type KeyObject } from 'node:crypto';

// The forms of a webhook's secret and public key (the service's decisions D7 and D11).

const SECRET_PREFIX = 'whsec_';
const PUBLIC_KEY_PREFIX = 'whpk_';

/** The secret's 32 bytes: what follows `whsec_`, in base64url (as shown first) or standard base64. */
export function secretBytes(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

/**
 * The secret as Service-Signature's HMAC takes it: the string the service generated, `whsec_` and
 * base64url. Given the Standard Webhooks form (standard base64: it has `+`, `/` or `=`), the same
 * bytes written back in base64url; any other string as it is.
 */
export function serviceSecret(secret: string): string {
  if (!secret.startsWith(SECRET_PREFIX) || !/[+/=]/.test(secret)) return secret;
  return `${SECRET_PREFIX}${secretBytes(secret).toString('base64url')}`;
}

/** The secret as the Standard Webhooks libraries take it: `whsec_` and its bytes in standard base64. */
export function standardWebhooksSecret(secret: string): string {
  return `${SECRET_PREFIX}${secretBytes(secret).toString('base64')}`;
}

/** Whether a key given to verifyWebhook is a public key rather than a secret. */
export const isPublicKey = (key: string) => key.startsWith(PUBLIC_KEY_PREFIX);

/** The ed25519 public key a `whpk_…` names (its 32 raw bytes in standard base64); throws a TypeError. */
export function publicKey(text: string): KeyObject {
  const raw = Buffer.from(text.slice(PUBLIC_KEY_PREFIX.length), 'base64');
  if (raw.length !== 32 || !/^whpk_[A-Za-z0-9+/]{43}=?$/.test(text))
    throw new TypeError(
      `verifyWebhook: ${text.slice(0, 12)}… is not a webhook's public key: copy it whole (whpk_ and 44 characters) from API settings.`,
    );
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
}

/** The `whpk_…` text of an ed25519 public key. */
export function publicKeyText(key: KeyObject): string {
  const { x } = key.export({ format: 'jwk' });
  return `${PUBLIC_KEY_PREFIX}${Buffer.from(x!, 'base64url').toString('base64')}`;
}
