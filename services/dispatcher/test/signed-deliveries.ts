import { sql } from 'kysely';
import { ensureEventPartitions } from '@trips/db/events';
import { createSettings, PLATFORM } from '@trips/settings';
import {
  amqpUrl,
  createTestCa,
  startReceiver,
  waitFor,
  type ReceivedRequest,
  type TestReceiver,
} from '@trips/testkit';
import { agencyWithOwners, makeEvent, startTestDispatcher, type TestDispatcher } from './support.ts';

// Real deliveries from the real dispatcher, of every way one is made, for verifiers written by
// others (verifiers.test.ts: npm libraries; recipes.test.ts: docs/webhooks.md's receivers in other
// languages): an event, a test event, a redelivery, a resend, one during a secret's rotation, and
// with ed25519 switched on, then during its key's rotation. Every change is made through the
// settings module, as the settings page and tripctl make it.

export interface SignedDelivery {
  /** How it was made: 'event', 'test event', 'redelivery', 'resend', 'secret rotation', … */
  kind: string;
  request: ReceivedRequest;
  /** Each secret that signed it, as D7 writes it (whsec_ + base64url), and in the Standard Webhooks form. */
  secrets: { secret: string; standard: string }[];
  /** The ed25519 public keys (whpk_…) whose v1a it carries; none before ed25519 is on. */
  publicKeys: string[];
}

export interface DeliveryRun {
  deliveries: SignedDelivery[];
  /** A secret that never signed anything, in both forms. */
  stranger: { secret: string; standard: string };
  stop(): Promise<void>;
}

export async function collectSignedDeliveries(): Promise<DeliveryRun> {
  const ca = await createTestCa();
  const receiver: TestReceiver = await startReceiver(ca);
  const d: TestDispatcher = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile });
  try {
    const settings = createSettings({
      db: d.db,
      amqpUrls: [amqpUrl],
      amqpPrefix: d.prefix,
      allowPrivateNetworks: true,
    });
    await ensureEventPartitions(d.db, new Date(Date.now() - 86_400_000), 2);
    const { agencyId } = await agencyWithOwners(d.db);
    const created = await d.changeHeard(agencyId, () =>
      settings.createWebhook(PLATFORM, {
        agencyId,
        url: receiver.url,
        eventTypes: ['trip.created', 'trip.status_changed'],
      }),
    );
    const id = created.webhook.id;
    let secrets = [{ secret: created.secret, standard: created.standard_webhooks_secret }];
    let publicKeys: string[] = [];
    const deliveries: SignedDelivery[] = [];
    const received = async (kind: string, eventId: string, nth = 1) => {
      const request = await waitFor(
        () => receiver.requests.filter((r) => r.headers['service-event-id'] === eventId)[nth - 1],
        { what: `the ${kind} delivery` },
      );
      deliveries.push({ kind, request, secrets: [...secrets], publicKeys: [...publicKeys] });
    };
    const published = async (kind: string) => {
      const event = makeEvent('trip.status_changed');
      await d.publish(agencyId, event);
      await received(kind, event.id);
    };

    await published('event');
    await received('test event', (await settings.sendTestEvent(PLATFORM, id)).event.id);
    const { rows } = await sql<{ id: string }>`
      INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
      VALUES (nextval('events_seq'), gen_id('evt'), ${agencyId}, 'trip.created', 'trip', 'trp_Redelivered',
              '{}'::jsonb, now() - interval '1 minute')
      RETURNING id`.execute(d.db);
    const recorded = rows[0]!.id;
    await settings.redeliver(PLATFORM, id, { since: new Date(Date.now() - 3600_000) });
    await received('redelivery', recorded);
    await settings.resendEvent(PLATFORM, id, recorded);
    await received('resend', recorded, 2);

    const rotated = await d.changeHeard(agencyId, () =>
      settings.rotateSecret(PLATFORM, id, { overlapMs: 3600_000 }),
    );
    secrets = [{ secret: rotated.secret, standard: rotated.standard_webhooks_secret }, ...secrets];
    await published('secret rotation');

    const on = await d.changeHeard(agencyId, () => settings.enableEd25519(PLATFORM, id));
    publicKeys = [on.public_key];
    await published('ed25519');
    const next = await d.changeHeard(agencyId, () =>
      settings.rotateSigningKey(PLATFORM, id, { overlapMs: 3600_000 }),
    );
    publicKeys = [next.public_key, ...publicKeys];
    await published('ed25519 key rotation');

    const stranger = `whsec_${Buffer.alloc(32, 7).toString('base64url')}`;
    return {
      deliveries,
      stranger: { secret: stranger, standard: `whsec_${Buffer.alloc(32, 7).toString('base64')}` },
      stop: async () => {
        await d.cleanup();
        await receiver.close();
      },
    };
  } catch (error) {
    await d.cleanup();
    await receiver.close();
    throw error;
  }
}
