import { createPrivateKey, randomBytes, sign, verify } from 'node:crypto';
import {
  generateSigningKeyPair,
  nodeEd25519Signer,
  publicKeyFromText,
  publicKeyText,
  secretBytes,
  serviceSignature,
  signatureHeaders,
  signingPrivateKey,
  standardSignature,
  standardWebhooksSecret,
} from '../src/webhook-signing.ts';

// Fixed vectors computed by others, so the signing is checked against more than itself: D7's by
// openssl, D11's HMAC by the Standard Webhooks specification's own example, ed25519 by RFC 8032.

test("Service-Signature: t, then one v1 per secret, each an HMAC of `<t>.<body>` keyed by the secret's UTF-8", () => {
  // printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
  expect(serviceSignature('{"a":1}', ['whsec_test'], 1_700_000_000)).toBe(
    't=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789',
  );
  expect(serviceSignature('{"a":1}', ['whsec_test', 'whsec_test'], 1_700_000_000).split(',v1=')).toHaveLength(
    3,
  );
});

test("webhook-signature: the Standard Webhooks specification's example, keyed by the secret's bytes", () => {
  // From the specification (github.com/standard-webhooks/standard-webhooks, its libraries' tests).
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  expect(
    standardSignature('msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}', [secret]),
  ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  // One per secret, space-separated, newest first as given.
  const two = standardSignature('evt_1', 1, '{}', [secret, 'whsec_test']).split(' ');
  expect(two).toHaveLength(2);
  expect(two[0]).toBe(standardSignature('evt_1', 1, '{}', [secret]));
});

test('a D7 secret (base64url) and its Standard Webhooks form (standard base64) are the same 32 bytes', () => {
  for (let i = 0; i < 50; i++) {
    const bytes = randomBytes(32);
    const secret = `whsec_${bytes.toString('base64url')}`;
    const standard = standardWebhooksSecret(secret);
    expect(standard).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secretBytes(secret)).toEqual(bytes);
    expect(secretBytes(standard)).toEqual(bytes);
    expect(standardWebhooksSecret(standard)).toBe(standard);
    // Either form keys the same Standard Webhooks HMAC.
    expect(standardSignature('evt_1', 1, '{}', [standard])).toBe(
      standardSignature('evt_1', 1, '{}', [secret]),
    );
  }
});

test("v1a: an ed25519 signature of `<id>.<timestamp>.<body>` after the v1s; RFC 8032's key shows as whpk_ + base64", () => {
  // RFC 8032 7.1, TEST 1: its secret key (a seed), public key, and the signature of the empty message.
  const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
  const publicRaw = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
  const privateKey = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: seed.toString('base64url'), x: publicRaw.toString('base64url') },
    format: 'jwk',
  });
  const publicKey = publicKeyFromText(`whpk_${publicRaw.toString('base64')}`);
  expect(publicKeyText(publicKey)).toBe(`whpk_${publicRaw.toString('base64')}`);

  const header = standardSignature(
    'evt_1',
    1_700_000_000,
    '{"a":1}',
    ['whsec_test'],
    [nodeEd25519Signer(privateKey)],
  );
  const [v1, v1a, ...rest] = header.split(' ');
  expect(rest).toEqual([]);
  expect(v1).toBe(standardSignature('evt_1', 1_700_000_000, '{"a":1}', ['whsec_test']));
  expect(v1a).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
  const signature = Buffer.from(v1a!.slice(4), 'base64');
  expect(verify(null, Buffer.from('evt_1.1700000000.{"a":1}'), publicKey, signature)).toBe(true);
  expect(verify(null, Buffer.from('evt_1.1700000000.{"a":2}'), publicKey, signature)).toBe(false);
  // The RFC's own vector, so the key above is the RFC's key.
  expect(sign(null, Buffer.alloc(0), privateKey).toString('hex')).toBe(
    'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  );
});

test('a generated pair: the private key kept as PKCS #8 signs what the whpk_ text verifies', () => {
  const pair = generateSigningKeyPair();
  expect(pair.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
  const headers = signatureHeaders('evt_x', '{"b":2}', 1_700_000_001, {
    secrets: ['whsec_test'],
    ed25519: [nodeEd25519Signer(signingPrivateKey(pair.privateKey))],
  });
  expect(headers['webhook-id']).toBe('evt_x');
  expect(headers['webhook-timestamp']).toBe('1700000001');
  expect(headers['service-signature']).toBe(serviceSignature('{"b":2}', ['whsec_test'], 1_700_000_001));
  const v1a = headers['webhook-signature'].split(' ').find((s) => s.startsWith('v1a,'))!;
  expect(
    verify(
      null,
      Buffer.from('evt_x.1700000001.{"b":2}'),
      publicKeyFromText(pair.publicKey),
      Buffer.from(v1a.slice(4), 'base64'),
    ),
  ).toBe(true);
  expect(() => publicKeyFromText('whpk_short')).toThrow(/not an ed25519 public key/);
});
