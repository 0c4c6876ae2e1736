import { createPrivateKey } from 'node:crypto';
import sodium from 'sodium-native';
import type { Ed25519Signer } from '@trips/contracts/webhook-signing';

/**
 * The dispatcher's signer of a webhook's ed25519 key (D11), from the key as stored (PKCS #8 DER):
 * libsodium's, where everything else signs with Node's crypto, because libsodium's ed25519 signature
 * costs about half of OpenSSL's and the dispatcher makes one per delivery per key
 * (docs/benchmarks/dispatcher.md). ed25519 is deterministic (RFC 8032): the signatures are the same.
 *
 * The secret key is kept in an ordinary buffer, as Node keeps a KeyObject's, not in sodium_malloc's
 * guarded pages: those take four memory mappings a key, and the targets cache holds thousands of
 * webhooks (two keys each while a rotation overlaps), past the kernel's limit of mappings a process.
 */
export function sodiumEd25519Signer(pkcs8: Buffer): Ed25519Signer {
  const seed = ed25519Seed(pkcs8);
  const publicKey = Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES);
  const secretKey = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed);
  seed.fill(0);
  return (message) => {
    const signature = Buffer.allocUnsafe(sodium.crypto_sign_BYTES);
    sodium.crypto_sign_detached(signature, message, secretKey);
    return signature;
  };
}

/**
 * The 32-byte seed (RFC 8032's private key) of an ed25519 key in PKCS #8 DER; throws when the DER is
 * no ed25519 private key. Node parses the DER, rather than this taking its last 32 bytes: PKCS #8 v2
 * ends with the public key instead.
 */
function ed25519Seed(pkcs8: Buffer): Buffer {
  const key = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  if (key.asymmetricKeyType !== 'ed25519')
    throw new TypeError(`not an ed25519 key: ${key.asymmetricKeyType}`);
  return Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url');
}
