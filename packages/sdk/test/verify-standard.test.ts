import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import {
  generateTestSigningKey,
  signWebhookForTest,
  verifyWebhook,
  WebhookVerificationError,
  type Event,
} from '../src/index.ts';

// verifyWebhook with the Standard Webhooks header set (D11): a delivery verifies with either set,
// with the secret in either form, and with the webhook's public key through its v1a; each bad
// input has the same reasons as with Service-Signature. The expected signatures are computed here
// from the specification, apart from the SDK's signing.

const bytes = Buffer.alloc(32, 0xfb); // base64url has - and _ here, standard base64 + and /
const secret = `whsec_${bytes.toString('base64url')}`;
const standardForm = `whsec_${bytes.toString('base64')}`;
const other = `whsec_${Buffer.alloc(32, 1).toString('base64url')}`;
const event: Event = {
  object: 'event',
  id: 'evt_4kXq9ZtR2mB7nW1c',
  type: 'trip.created',
  created_at: '2026-11-21T10:15:30.123Z',
  related_object: { type: 'trip', id: 'trp_Q3R8t5D7kCLGFtRk', url: '/api/v1/trips/trp_Q3R8t5D7kCLGFtRk' },
  data: {},
};
const now = Math.floor(Date.now() / 1000);

function reason(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
  throw new Error('accepted, but it should have been refused');
}

/** Only the Standard Webhooks headers of a signed delivery, as a relay that drops the others sends them. */
const standardOnly = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('webhook-')));

test('the Standard Webhooks set is signed as the specification says: v1 per secret over `<id>.<t>.<body>`, keyed by its bytes', () => {
  const { body, headers } = signWebhookForTest(event, [secret, other], { timestamp: now });
  const v1 = (key: string) =>
    `v1,${createHmac('sha256', Buffer.from(key.slice(6), 'base64url'))
      .update(`${event.id}.${now}.${body}`)
      .digest('base64')}`;
  expect(headers).toMatchObject({
    'webhook-id': event.id,
    'webhook-timestamp': String(now),
    'webhook-signature': `${v1(secret)} ${v1(other)}`,
  });
  // The specification's own example, whose body is no event: it verifies, then is no event.
  const example = {
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': '1614265330',
    'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const check = (key: string) => () =>
    verifyWebhook('{"test": 2432232314}', example, key, { now: 1614265330 });
  expect(reason(check('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'))).toBe('invalid_body');
  expect(reason(check(other))).toBe('no_matching_signature');
});

test('either header set verifies, with the secret in either form', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  for (const key of [secret, standardForm]) {
    expect(verifyWebhook(body, headers, key).id).toBe(event.id);
    expect(verifyWebhook(body, standardOnly(headers), key).id).toBe(event.id);
    expect(verifyWebhook(body, new Headers(standardOnly(headers)), key).id).toBe(event.id);
  }
  // Signed with the Standard Webhooks form, the Service-Signature is the one the service sends.
  expect(signWebhookForTest(event, standardForm, { timestamp: now }).headers).toEqual(
    signWebhookForTest(event, secret, { timestamp: now }).headers,
  );
  const changed = body.replace('trip.created', 'trip.deleted');
  expect(reason(() => verifyWebhook(changed, standardOnly(headers), secret))).toBe('no_matching_signature');
  expect(reason(() => verifyWebhook(body, standardOnly(headers), other))).toBe('no_matching_signature');
  expect(reason(() => verifyWebhook(body, {}, secret))).toBe('missing_header');
});

test('a public key verifies v1a; another key, a changed body or a webhook without ed25519 match nothing', () => {
  const { privateKey, publicKey } = generateTestSigningKey();
  expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
  const { body, headers } = signWebhookForTest(event, secret, { ed25519PrivateKey: privateKey });
  expect(headers['webhook-signature']).toMatch(/^v1,\S{44} v1a,[A-Za-z0-9+/]{86}==$/);
  // Independently: the v1a is ed25519 over `<id>.<t>.<body>`.
  const t = headers['webhook-timestamp'];
  expect(headers['webhook-signature']!.split(' ')[1]).toBe(
    `v1a,${sign(null, Buffer.from(`${event.id}.${t}.${body}`), privateKey).toString('base64')}`,
  );
  expect(verifyWebhook(body, headers, publicKey).id).toBe(event.id);
  // A public key verifies the Standard Webhooks set even where Service-Signature is present.
  expect(verifyWebhook(body, headers, [secret, publicKey]).id).toBe(event.id);
  const stranger = generateTestSigningKey().publicKey;
  expect(reason(() => verifyWebhook(body, headers, stranger))).toBe('no_matching_signature');
  expect(reason(() => verifyWebhook(`${body} `, headers, publicKey))).toBe('no_matching_signature');
  const hmacOnly = signWebhookForTest(event, secret);
  expect(() => verifyWebhook(hmacOnly.body, hmacOnly.headers, publicKey)).toThrow(
    /no v1a \(ed25519\) signature: switch the webhook to ed25519/,
  );
  const { 'webhook-signature': _, ...withoutIt } = headers;
  expect(reason(() => verifyWebhook(body, withoutIt, publicKey))).toBe('missing_header');
  // During a key's rotation any v1a may match.
  const older = generateKeyPairSync('ed25519').privateKey;
  const two = signWebhookForTest(event, secret, { ed25519PrivateKey: older });
  expect(reason(() => verifyWebhook(two.body, two.headers, publicKey))).toBe('no_matching_signature');
  expect(
    verifyWebhook(two.body, two.headers, [publicKey, generateTestSigningKey().publicKey, secret]).id,
  ).toBe(event.id);
});

test('a public key that is not one is a setup error', () => {
  const { body, headers } = signWebhookForTest(event, secret);
  for (const key of ['whpk_', 'whpk_short', `whpk_${Buffer.alloc(31).toString('base64')}`])
    expect(() => verifyWebhook(body, headers, key)).toThrow(/is not a webhook's public key/);
});

test('each malformed Standard Webhooks header is malformed_header; times beyond the tolerance are refused', () => {
  const { body, headers } = signWebhookForTest(event, secret, { timestamp: now });
  const set = standardOnly(headers);
  const v1 = set['webhook-signature']!;
  for (const changed of [
    { 'webhook-id': '' },
    { 'webhook-timestamp': 'soon' },
    { 'webhook-timestamp': '' },
    { 'webhook-signature': 'garbage' },
    { 'webhook-signature': 'v1' },
    { 'webhook-signature': `v1,${v1.slice(3, -1)}` }, // not 32 bytes
    { 'webhook-signature': 'v1a,AAAA' },
    { 'webhook-signature': 'v2,abc' }, // no v1 or v1a at all
  ]) {
    expect({
      changed,
      reason: reason(() => verifyWebhook(body, { ...set, ...changed }, secret, { now })),
    }).toEqual({
      changed,
      reason: 'malformed_header',
    });
  }
  // A version it does not know, beside one it does, is ignored, as the specification says.
  expect(verifyWebhook(body, { ...set, 'webhook-signature': `v2,abc ${v1}` }, secret, { now }).id).toBe(
    event.id,
  );
  expect(reason(() => verifyWebhook(body, set, secret, { now: now + 301 }))).toBe('timestamp_too_old');
  expect(reason(() => verifyWebhook(body, set, secret, { now: now - 301 }))).toBe('timestamp_in_future');
  expect(verifyWebhook(body, set, secret, { now: now + 300 }).id).toBe(event.id);
});
