import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  nodeEd25519Signer,
  signatureHeaders,
  standardWebhooksSecret,
} from '@trips/contracts/webhook-signing';
import { signDelivery } from '../../packages/sdk/src/webhooks/sign.ts';
import { verifyWebhook, type Event } from '../../packages/sdk/src/index.ts';

// The SDK ships alone (no workspace dependencies), so it has its own copy of how a delivery is
// signed (packages/sdk/src/webhooks/sign.ts) beside the service's (contracts' webhook-signing, which
// the dispatcher uses). Both copies make the same signing headers for any event, secrets, keys and
// time, so `trips listen` and signWebhookForTest sign exactly as a delivery is signed.

const keys = Array.from({ length: 3 }, () => generateKeyPairSync('ed25519').privateKey);
const secretOf = (bytes: Uint8Array) => `whsec_${Buffer.from(bytes).toString('base64url')}`;

const arbitraryEvent = fc.record({
  id: fc.stringMatching(/^evt_[0-9A-Za-z_-]{1,40}$/),
  type: fc.constantFrom('trip.created', 'payment.paid', 'contact.updated'),
  created_at: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  title: fc.string({ unit: 'grapheme', maxLength: 60 }),
});

test('the SDK and the service sign any delivery with the same four signing headers', () => {
  fc.assert(
    fc.property(
      arbitraryEvent,
      fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 4_000_000_000 }),
      ({ id, type, created_at, title }, secretBytes, keyCount, timestamp) => {
        // Any text in the body: the signatures cover the raw UTF-8 bytes.
        const event = {
          object: 'event',
          id,
          type,
          created_at,
          related_object: { type: 'trip', id: 'trp_x', url: '/api/v1/trips/trp_x' },
          data: { title },
        } as unknown as Event;
        const secrets = secretBytes.map(secretOf);
        const ed25519 = keys.slice(0, keyCount);
        const sdk = signDelivery(event, secrets, timestamp, ed25519);
        const service = signatureHeaders(event.id, JSON.stringify(event), timestamp, {
          secrets,
          ed25519: ed25519.map(nodeEd25519Signer),
        });
        expect(sdk.body).toBe(JSON.stringify(event));
        expect(sdk.headers).toMatchObject(service);
      },
    ),
    { numRuns: 200 },
  );
});

test("the service's Standard Webhooks form of a secret is the SDK's, and the SDK verifies with it", () => {
  const secret = secretOf(randomBytes(32));
  const event = { object: 'event', id: 'evt_1', type: 'trip.created' } as unknown as Event;
  const { body, headers } = signDelivery(event, [secret], Math.floor(Date.now() / 1000));
  const webhookOnly = Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith('webhook-')));
  expect(verifyWebhook(body, webhookOnly, standardWebhooksSecret(secret)).id).toBe('evt_1');
});
