import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { verifyAsync as nobleVerify } from '@noble/ed25519';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import type { ReceivedRequest } from '@trips/testkit';
import { collectSignedDeliveries, type DeliveryRun, type SignedDelivery } from './signed-deliveries.ts';

// Real deliveries, checked by libraries no one here wrote (issue 42, item 3): the Standard Webhooks
// specification's reference library and Svix's accept every one and refuse a tampered body, a
// wrong secret and a stale timestamp; stripe-node accepts Service-Signature as Stripe's own
// (architecture.md); ed25519's v1a verifies with Node's crypto and with @noble/ed25519, an
// implementation of its own. The tallies at the end are what the note reports.

let run: DeliveryRun;
beforeAll(async () => {
  run = await collectSignedDeliveries();
}, 90_000);
afterAll(() => run?.stop());

const stripe = new Stripe('sk_test_not_used_no_request_is_made');
const STALE_MS = 301_000;

/** The request's headers as a plain object of strings, as a web framework hands them over. */
const headersOf = (request: ReceivedRequest) =>
  Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
/** The same body with one byte changed. */
const tampered = (body: string) => body.replace('"object":"event"', '"object":"Event"');

/** Runs `check` as if this machine's clock were `aheadMs` later: the libraries read Date.now(). */
function later<T>(aheadMs: number, check: () => T): T {
  const now = Date.now;
  Date.now = () => now() + aheadMs;
  try {
    return check();
  } finally {
    Date.now = now;
  }
}

type Verifier = (
  body: string,
  headers: Record<string, string>,
  secret: { secret: string; standard: string },
) => unknown;
/** Each library, and what it says when no signature matches and when the time is too old. */
const LIBRARIES: Record<string, { verify: Verifier; noMatch: RegExp; stale: RegExp }> = {
  standardwebhooks: {
    verify: (body, headers, s) => new StandardWebhook(s.standard).verify(body, headers),
    noMatch: /^No matching signature found$/,
    stale: /^Message timestamp too old$/,
  },
  svix: {
    verify: (body, headers, s) => new SvixWebhook(s.standard).verify(body, headers),
    noMatch: /^No matching signature found$/,
    stale: /^Message timestamp too old$/,
  },
  stripe: {
    verify: (body, headers, s) =>
      stripe.webhooks.constructEvent(body, headers['service-signature']!, s.secret),
    noMatch: /^No signatures found matching the expected signature for payload/,
    stale: /^Timestamp outside the tolerance zone$/,
  },
};
const tally: Record<string, { accepted: number; refused: number }> = {};
const count = (library: string, outcome: 'accepted' | 'refused') => {
  tally[library] ??= { accepted: 0, refused: 0 };
  tally[library][outcome]++;
};

const accepts = (verify: () => unknown) => {
  verify();
  return true;
};
/** The refusal's message; 'accepted' when there was none. */
const refusal = (verify: () => unknown): string => {
  try {
    verify();
    return 'accepted';
  } catch (error) {
    return (error as Error).message;
  }
};

test('the deliveries: one of each kind, every one with both header sets at the same second', () => {
  expect(run.deliveries.map((d) => d.kind)).toEqual([
    'event',
    'test event',
    'redelivery',
    'resend',
    'secret rotation',
    'ed25519',
    'ed25519 key rotation',
  ]);
  for (const { request, secrets, publicKeys } of run.deliveries) {
    const h = headersOf(request);
    expect(h['webhook-id']).toBe(h['service-event-id']);
    expect(h['service-signature']).toMatch(new RegExp(`^t=${h['webhook-timestamp']},`));
    const entries = h['webhook-signature']!.split(' ');
    expect(entries.filter((e) => /^v1,[A-Za-z0-9+/]{43}=$/.test(e))).toHaveLength(secrets.length);
    expect(entries.filter((e) => /^v1a,[A-Za-z0-9+/]{86}==$/.test(e))).toHaveLength(publicKeys.length);
    expect(entries).toHaveLength(secrets.length + publicKeys.length);
  }
});

describe.each(Object.keys(LIBRARIES))('%s', (library) => {
  const { verify: verifyWith, noMatch, stale } = LIBRARIES[library]!;

  test('accepts every delivery, with each secret that signed it', () => {
    for (const { request, secrets } of run.deliveries)
      for (const secret of secrets) {
        expect(accepts(() => verifyWith(request.body, headersOf(request), secret))).toBe(true);
        count(library, 'accepted');
      }
  });

  test('refuses each delivery with its body tampered, with a wrong secret, and 301 s later, saying why', () => {
    const checks = (d: SignedDelivery): [string, RegExp, () => unknown][] => [
      [
        'tampered body',
        noMatch,
        () => verifyWith(tampered(d.request.body), headersOf(d.request), d.secrets[0]!),
      ],
      ['wrong secret', noMatch, () => verifyWith(d.request.body, headersOf(d.request), run.stranger)],
      [
        'stale timestamp',
        stale,
        () => later(STALE_MS, () => verifyWith(d.request.body, headersOf(d.request), d.secrets[0]!)),
      ],
    ];
    for (const delivery of run.deliveries)
      for (const [what, reason, check] of checks(delivery)) {
        expect([delivery.kind, what, refusal(check)]).toEqual([
          delivery.kind,
          what,
          expect.stringMatching(reason),
        ]);
        count(library, 'refused');
      }
  });
});

test("the Standard Webhooks libraries refuse D7's form of a secret that has - or _: hence both forms are shown", () => {
  const withUrlCharacters = run.deliveries
    .flatMap((d) => d.secrets)
    .find((s) => /[-_]/.test(s.secret.slice(6)));
  if (!withUrlCharacters) return; // each character of 43 is - or _ with 1 in 32: nearly never none
  expect(() => new StandardWebhook(withUrlCharacters.secret)).toThrow(/incorrect characters/);
});

/** whpk_ + the raw 32-byte key in standard base64, read here as the specification says, not by our code. */
const rawPublicKey = (text: string) => Buffer.from(text.replace(/^whpk_/, ''), 'base64');
const v1aOf = (request: ReceivedRequest) =>
  String(request.headers['webhook-signature'])
    .split(' ')
    .filter((e) => e.startsWith('v1a,'))
    .map((e) => Buffer.from(e.slice(4), 'base64'));
const signedContent = (request: ReceivedRequest, body = request.body) =>
  Buffer.from(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${body}`, 'utf8');

const ED25519: Record<string, (message: Buffer, signature: Buffer, publicKey: Buffer) => Promise<boolean>> = {
  'node:crypto verify': async (message, signature, publicKey) =>
    nodeVerify(
      null,
      message,
      createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: publicKey.toString('base64url') },
        format: 'jwk',
      }),
      signature,
    ),
  '@noble/ed25519': (message, signature, publicKey) => nobleVerify(signature, message, publicKey),
};

describe.each(Object.keys(ED25519))('ed25519 with %s', (library) => {
  const check = ED25519[library]!;
  const signed = () => run.deliveries.filter((d) => d.publicKeys.length > 0);

  test('each v1a verifies with its own public key, newest first; not over a tampered body, nor with another key', async () => {
    expect(signed()).toHaveLength(2);
    for (const { request, publicKeys } of signed()) {
      const signatures = v1aOf(request);
      expect(signatures).toHaveLength(publicKeys.length);
      for (const [i, key] of publicKeys.entries()) {
        expect(await check(signedContent(request), signatures[i]!, rawPublicKey(key))).toBe(true);
        count(library, 'accepted');
        expect(
          await check(signedContent(request, tampered(request.body)), signatures[i]!, rawPublicKey(key)),
        ).toBe(false);
        count(library, 'refused');
        const other = publicKeys[(i + 1) % publicKeys.length]!;
        if (other !== key) {
          expect(await check(signedContent(request), signatures[i]!, rawPublicKey(other))).toBe(false);
          count(library, 'refused');
        }
      }
    }
  });
});

test('the tallies', () => {
  // 7 deliveries, the last three signed by two secrets: 10 acceptances and 21 refusals per HMAC library; 3 v1a
  // signatures on 2 deliveries: 3 acceptances and 5 refusals per ed25519 library.
  expect(tally).toEqual({
    standardwebhooks: { accepted: 10, refused: 21 },
    svix: { accepted: 10, refused: 21 },
    stripe: { accepted: 10, refused: 21 },
    'node:crypto verify': { accepted: 3, refused: 5 },
    '@noble/ed25519': { accepted: 3, refused: 5 },
  });
});
