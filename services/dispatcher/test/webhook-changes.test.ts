import { adminQuery, createTestCa, startReceiver, verifySignature, waitFor } from '@trips/testkit';
import type { TestCa, TestReceiver } from '@trips/testkit';
import type { Event } from '@trips/contracts';
import { rotateWebhookSecretIn } from '@trips/db/webhook-secrets';
import { createWebhook, setWebhookEnabled, updateWebhookConfig } from '@trips/db/webhooks';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// The dispatcher keeps each agency's webhooks between delivery batches (targets-cache.ts). Every
// change an owner (or anyone) makes applies to the first event delivered once the dispatcher has
// heard of it, which is the NOTIFY of the change's commit: the tests wait for that and no longer.

let ca: TestCa;
let d: TestDispatcher;
const receivers: TestReceiver[] = [];
/** Every statement the dispatcher's pools sent, in order. */
const statements: string[] = [];
/** The reads of delivery targets among statements sent since `from`. */
const targetReads = (from: number) =>
  statements.slice(from).filter((text) => text.startsWith('/* prepared: delivery_targets'));

/** While the LISTEN connection is lost: long enough to watch deliveries read Postgres meanwhile. */
const LISTEN_RETRY_MS = 3_000;

beforeAll(async () => {
  ca = await createTestCa();
  d = await startTestDispatcher(
    { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_RETRY_DELAYS: '1500ms', WEBHOOK_FAILURE_WINDOW: '5m' },
    { onStatement: (text) => statements.push(text), targetsListenRetryMs: LISTEN_RETRY_MS },
  );
});

afterAll(async () => {
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

const requestsOf = (r: TestReceiver, event: Event) =>
  r.requests.filter((q) => q.headers['service-event-id'] === event.id);

/** Publishes an event and waits until `to` has it; answers the request. */
async function deliver(agencyId: string, event: Event, to: TestReceiver) {
  await d.publish(agencyId, event);
  const [request] = await waitFor(() => requestsOf(to, event).length > 0 && requestsOf(to, event), {
    what: `${event.id} at ${to.url}`,
  });
  return request!;
}

/**
 * Publishes an event that `witness` gets and `not` must not: once the witness has it, its fan-out
 * has been made, and a little later any attempt of it to `not` would have arrived.
 */
async function deliverNotTo(agencyId: string, event: Event, witness: TestReceiver, not: TestReceiver) {
  await deliver(agencyId, event, witness);
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(requestsOf(not, event)).toHaveLength(0);
}

/** An agency with a webhook at a fresh receiver whose webhooks the dispatcher has cached. */
async function cachedAgency(eventTypes?: string[]) {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  // Its creation heard first: a lookup that begins before the notification arrives is not kept.
  const webhook = await d.changeHeard(agencyId, () => webhookFor(d.db, agencyId, r.url, eventTypes));
  await deliver(agencyId, makeEvent(), r);
  // Cached: the next event reads nothing.
  const from = statements.length;
  await deliver(agencyId, makeEvent(), r);
  expect(targetReads(from)).toEqual([]);
  return { agencyId, webhook, r };
}

test('a changed URL applies to the next event', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  const moved = await receiver();
  const started = Date.now();
  await d.changeHeard(agencyId, () => updateWebhookConfig(d.db, webhook.id, { url: moved.url }));
  // Heard within the notification's latency, not a TTL.
  expect(Date.now() - started).toBeLessThan(2_000);
  const event = makeEvent();
  await deliver(agencyId, event, moved);
  expect(requestsOf(r, event)).toHaveLength(0);
});

test('changed event types apply to the next event: a type added is delivered, a type removed is not', async () => {
  const { agencyId, webhook, r } = await cachedAgency(['trip.created']);
  const witness = await receiver();
  await d.changeHeard(agencyId, () =>
    webhookFor(d.db, agencyId, witness.url, ['trip.created', 'payment.paid', 'contact.created']),
  );
  await d.changeHeard(agencyId, () =>
    updateWebhookConfig(d.db, webhook.id, { eventTypes: ['trip.created', 'payment.paid'] }),
  );
  await deliver(agencyId, makeEvent('payment.paid'), r);
  await d.changeHeard(agencyId, () =>
    updateWebhookConfig(d.db, webhook.id, { eventTypes: ['contact.created'] }),
  );
  await deliverNotTo(agencyId, makeEvent('payment.paid'), witness, r);
  await deliver(agencyId, makeEvent('contact.created'), r);
});

test('a rotated secret signs the next event; the old one stops at the end of its overlap, with nothing read', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  const overlapMs = 1_500;
  const { secret: fresh } = await d.changeHeard(agencyId, () =>
    d.db.transaction().execute((trx) => rotateWebhookSecretIn(trx, webhook.id, overlapMs)),
  );
  const ends = Date.now() + overlapMs;
  const during = await deliver(agencyId, makeEvent(), r);
  expect(during.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  expect(verifySignature(during, fresh)).toBe(true);
  expect(verifySignature(during, webhook.secret)).toBe(true);

  // The overlap ends with no change of a row, so nothing is told: the cached secret ends by itself.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, ends - Date.now())));
  const from = statements.length;
  const after = await deliver(agencyId, makeEvent(), r);
  expect(after.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  expect(verifySignature(after, fresh)).toBe(true);
  expect(verifySignature(after, webhook.secret)).toBe(false);
  expect(targetReads(from)).toEqual([]);
});

test('switched off, nothing goes to the webhook from the next event; switched on, the next event does', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  const witness = await receiver();
  await d.changeHeard(agencyId, () => webhookFor(d.db, agencyId, witness.url));
  await d.changeHeard(agencyId, () => setWebhookEnabled(d.db, webhook.id, false));
  await deliverNotTo(agencyId, makeEvent(), witness, r);
  await d.changeHeard(agencyId, () => setWebhookEnabled(d.db, webhook.id, true));
  await deliver(agencyId, makeEvent(), r);
});

test('a deleted webhook gets nothing from the next event; a new one gets it', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  const added = await receiver();
  await d.changeHeard(agencyId, () =>
    createWebhook(d.db, { agencyId, url: added.url, eventTypes: ['trip.created'] }),
  );
  await deliver(agencyId, makeEvent(), added);
  await d.changeHeard(agencyId, () => d.db.deleteFrom('webhooks').where('id', '=', webhook.id).execute());
  await deliverNotTo(agencyId, makeEvent(), added, r);
});

test('a retry of a webhook whose epoch was bumped meanwhile is dropped, though its webhook was cached by id', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  r.answer = () => ({ status: 500 });
  const event = makeEvent();
  await d.publish(agencyId, event);
  // The first retry reads the webhook by id and keeps it.
  await waitFor(() => requestsOf(r, event).length === 2, { what: 'the first retry' });
  await d.changeHeard(agencyId, async () => {
    await setWebhookEnabled(d.db, webhook.id, false);
    await setWebhookEnabled(d.db, webhook.id, true);
  });
  const dropped = await waitFor(
    () =>
      d.outcomes.find(
        (o) => o.eventId === event.id && o.attempt === 3 && o.outcome.kind === 'dropped' && o.outcome,
      ),
    { what: 'the second retry dropped' },
  );
  expect(dropped.outcome).toEqual({ kind: 'dropped', reason: 'webhook_off' });
  expect(requestsOf(r, event)).toHaveLength(2);
});

test('while the LISTEN connection is lost every lookup reads Postgres; once back, the cache works again', async () => {
  const { agencyId, webhook, r } = await cachedAgency();
  const moved = await receiver();
  const events = d.targetsEvents.length;
  await adminQuery(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE application_name = 'trips-dispatcher-listener' AND datname = '${d.database.name}'`,
  );
  await waitFor(() => d.targetsEvents.slice(events).some(({ event }) => event === 'lost'), {
    what: 'the dispatcher to see its LISTEN connection lost',
  });
  const lostAt = Date.now();

  // A change nobody hears of applies to the next event all the same, and nothing read is kept.
  await updateWebhookConfig(d.db, webhook.id, { url: moved.url });
  const from = statements.length;
  await deliver(agencyId, makeEvent(), moved);
  await deliver(agencyId, makeEvent(), moved);
  expect(Date.now() - lostAt).toBeLessThan(LISTEN_RETRY_MS); // still lost throughout
  expect(targetReads(from)).toHaveLength(2);

  // Listening again: a read, then the cache; and changes are heard again.
  await waitFor(() => d.targetsEvents.slice(events).some(({ event }) => event === 'listening'), {
    what: 'the dispatcher to listen again',
    timeoutMs: 10_000,
  });
  const back = statements.length;
  await deliver(agencyId, makeEvent(), moved);
  await deliver(agencyId, makeEvent(), moved);
  expect(targetReads(back)).toHaveLength(1);
  await d.changeHeard(agencyId, () => updateWebhookConfig(d.db, webhook.id, { url: r.url }));
  await deliver(agencyId, makeEvent(), r);
});
