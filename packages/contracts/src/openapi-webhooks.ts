import { idPattern } from './ids.ts';
import { ref } from './openapi-names.ts';
import type { PathItem } from './openapi-types.ts';

// What the service sends to an owner's endpoint: the document's `webhooks`.

export const webhooks: Record<string, PathItem> = {
  event: {
    post: {
      operationId: 'receiveEvent',
      summary: 'Receive an event',
      description:
        'The service POSTs each event as JSON to every webhook subscribed to its type. Answer any 2xx within 10 seconds; redirects are not followed and count as failures. ' +
        'Failed deliveries are retried after 1 minute, 5 minutes, 30 minutes, 2 hours, 6 hours and then every 24 hours, for three days; a webhook failing for three days in a row is switched off and the owners are e-mailed. ' +
        'Events may arrive more than once and out of order: deduplicate by `Service-Event-Id` and read the object from the API. ' +
        'Verify `Service-Signature` before trusting the body: it is `t=<unix seconds>,v1=<hex HMAC-SHA256>` of `<t>.<raw body>` keyed with the UTF-8 bytes of the whole webhook secret, one `v1` per active secret while one is being rotated; reject a `t` older than 5 minutes. ' +
        "Or verify the Standard Webhooks headers with any Standard Webhooks library: `webhook-signature` holds `v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the secret's 32 bytes, one per active secret, and, for a webhook switched to ed25519, `v1a,<base64 ed25519 signature>` of the same, which its public key (`whpk_…`) verifies.",
      tags: ['Webhooks'],
      // Deliveries are authenticated by their signature, not by a bearer key.
      security: [],
      parameters: [
        {
          name: 'Service-Signature',
          in: 'header',
          required: true,
          description: 'The signature of this attempt: `t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…]`.',
          schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
        },
        {
          name: 'Service-Event-Id',
          in: 'header',
          required: true,
          description: 'The id of the event; the same on every attempt.',
          schema: { type: 'string', pattern: idPattern('event') },
        },
        {
          name: 'Service-Event-Type',
          in: 'header',
          required: true,
          description: 'The type of the event.',
          schema: ref('schemas', 'EventType'),
        },
        {
          name: 'webhook-id',
          in: 'header',
          required: true,
          description: 'Standard Webhooks: the id of the event, the same as `Service-Event-Id`.',
          schema: { type: 'string', pattern: idPattern('event') },
        },
        {
          name: 'webhook-timestamp',
          in: 'header',
          required: true,
          description:
            'Standard Webhooks: the time of this attempt in unix seconds, the same as the `t` of `Service-Signature`.',
          schema: { type: 'string', pattern: '^\\d+$' },
        },
        {
          name: 'webhook-signature',
          in: 'header',
          required: true,
          description:
            'Standard Webhooks: space-separated `v1,<base64 HMAC-SHA256>` per active secret, then `v1a,<base64 ed25519>` per signing key when ed25519 is on.',
          schema: {
            type: 'string',
            pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*( v1a,[A-Za-z0-9+/]{86}==)*$',
          },
        },
        {
          name: 'User-Agent',
          in: 'header',
          required: true,
          description: 'Identifies the sender.',
          schema: { const: 'TripService-Webhooks/1' },
        },
      ],
      requestBody: {
        description: 'The event.',
        required: true,
        content: { 'application/json': { schema: ref('schemas', 'Event') } },
      },
      responses: {
        '2XX': { description: 'Acknowledged. Any other answer, or none within 10 seconds, is retried.' },
      },
    },
  },
};
