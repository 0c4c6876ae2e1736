import { createPrivateKey, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import {
  generateSigningKeyPair,
  publicKeyFromText,
  signingPrivateKey,
} from '@trips/contracts/webhook-signing';
import { sodiumEd25519Signer } from '../src/sodium-signer.ts';

// The dispatcher signs v1a with libsodium, everything else with Node's crypto (D11): for the same
// key and message both must give the very same signature, which the webhook's public key verifies.
// A seed taken wrongly from the stored PKCS #8 DER signs with another key, and fails here.

const messages = [
  Buffer.alloc(0),
  Buffer.from('evt_1.1700000000.{"a":1}'),
  Buffer.from(`evt_2.1700000001.${JSON.stringify({ title: 'Zürich → 東京 🚆', notes: 'x'.repeat(4096) })}`),
  randomBytes(1000),
];

test('for keys as stored, libsodium signs as Node does, and the whpk_ public key verifies it', () => {
  for (let i = 0; i < 8; i++) {
    const pair = generateSigningKeyPair();
    const sodium = sodiumEd25519Signer(pair.privateKey);
    const node = signingPrivateKey(pair.privateKey);
    const publicKey = publicKeyFromText(pair.publicKey);
    for (const message of messages) {
      const signature = sodium(message);
      expect(signature.toString('hex')).toBe(sign(null, message, node).toString('hex'));
      expect(verify(null, message, publicKey, signature)).toBe(true);
    }
  }
});

test("RFC 8032's key, as PKCS #8, signs the RFC's own vector", () => {
  // RFC 8032 7.1, TEST 1: its secret key (a seed) and public key, and the signature of the empty message.
  const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
  const publicRaw = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
  const pkcs8 = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: seed.toString('base64url'), x: publicRaw.toString('base64url') },
    format: 'jwk',
  }).export({ format: 'der', type: 'pkcs8' });
  expect(sodiumEd25519Signer(pkcs8)(Buffer.alloc(0)).toString('hex')).toBe(
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  );
});

test('PKCS #8 v2, the public key after the seed, signs with the seed too', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url');
  const publicRaw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  // OneAsymmetricKey (RFC 5958): version 1, id-Ed25519, the seed, then [1] the public key.
  const v2 = Buffer.concat([
    Buffer.from('3051020101300506032b657004220420', 'hex'),
    seed,
    Buffer.from('812100', 'hex'),
    publicRaw,
  ]);
  const message = Buffer.from('evt_3.1700000002.{}');
  expect(sodiumEd25519Signer(v2)(message).toString('hex')).toBe(
    sign(null, message, privateKey).toString('hex'),
  );
});

test('a key that is not ed25519 is refused, not signed with', () => {
  const x25519 = generateKeyPairSync('x25519').privateKey.export({ format: 'der', type: 'pkcs8' });
  expect(() => sodiumEd25519Signer(x25519)).toThrow(/not an ed25519 key: x25519/);
  expect(() => sodiumEd25519Signer(Buffer.from('not a key'))).toThrow();
});
