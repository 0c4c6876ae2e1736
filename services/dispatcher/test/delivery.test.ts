import amqplib from 'amqplib';
import { sql } from 'kysely';
import { topology } from '@trips/broker';
import { listWebhookAttempts } from '@trips/db/webhook-attempts';
import { generateWebhookSecret } from '@trips/db/webhook-secrets';
import {
  amqpUrl,
  createTestCa,
  startReceiver,
  verifySignature,
  waitFor,
  type TestCa,
  type TestReceiver,
} from '@trips/testkit';
import { storableText } from '../src/sender.ts';
import { USER_AGENT } from '../src/index.ts';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

let ca: TestCa;
let receiver: TestReceiver;
let other: TestReceiver;
let d: TestDispatcher;

beforeAll(async () => {
  ca = await createTestCa();
  receiver = await startReceiver(ca);
  other = await startReceiver(ca);
  d = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile });
});

afterAll(async () => {
  await d?.cleanup();
  await receiver?.close();
  await other?.close();
});

const deliveredTo = (r: TestReceiver, eventId: string) =>
  r.requests.filter((q) => q.headers['service-event-id'] === eventId);

describe('a 2xx delivery', () => {
  test('POSTs the event record with the D7 headers and a signature an independent HMAC verifies', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    const { id: webhookId, secret } = await webhookFor(d.db, agencyId, receiver.url);
    const event = makeEvent('trip.status_changed');
    await d.publish(agencyId, event);

    const [request] = await waitFor(
      () => deliveredTo(receiver, event.id).length > 0 && deliveredTo(receiver, event.id),
      {
        what: 'the delivery',
      },
    );
    expect(request!.method).toBe('POST');
    expect(request!.path).toBe('/hooks');
    // The body is the event record exactly as GET /events shows it (same function, same bytes).
    expect(request!.body).toBe(JSON.stringify(event));
    expect(JSON.parse(request!.body)).toEqual(event);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['user-agent']).toBe(USER_AGENT);
    expect(request!.headers['service-event-id']).toBe(event.id);
    expect(request!.headers['service-event-type']).toBe('trip.status_changed');
    expect(request!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(request!, secret)).toBe(true);
    // The verification can fail: another secret, or a body changed by one byte, does not pass.
    expect(verifySignature(request!, generateWebhookSecret())).toBe(false);
    expect(
      verifySignature({ ...request!, body: request!.body.replace('confirmed', 'Confirmed') }, secret),
    ).toBe(false);

    const attempts = await waitFor(async () => {
      const rows = await listWebhookAttempts(d.db, webhookId);
      return rows.length > 0 && rows;
    });
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({
      event_id: event.id,
      event_type: 'trip.status_changed',
      attempt: 1,
      status_code: 200,
      error: null,
      succeeded: true,
      response_body: 'ok',
    });
    const webhook = await d.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', webhookId)
      .executeTakeFirstOrThrow();
    expect(webhook.last_success_at).not.toBeNull();
    expect(webhook.failing_since).toBeNull();
    // The delivery is in the debug log by ids, and the secret never is.
    expect(d.logs.text()).toContain(event.id);
    expect(d.logs.text()).not.toContain(secret);
  });

  test('any 2xx is a success; the attempts log keeps the first KiB of the answer', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    const r = await startReceiver(ca);
    try {
      r.answer = () => ({ status: 204 });
      const quiet = await webhookFor(d.db, agencyId, r.url);
      const e1 = makeEvent();
      await d.publish(agencyId, e1);
      await waitFor(async () => (await listWebhookAttempts(d.db, quiet.id)).length === 1);
      r.answer = () => ({ status: 202, body: 'é'.repeat(2000) });
      const e2 = makeEvent();
      await d.publish(agencyId, e2);
      await waitFor(async () => (await listWebhookAttempts(d.db, quiet.id)).length === 2);
      const [second, first] = await listWebhookAttempts(d.db, quiet.id);
      expect(first).toMatchObject({ status_code: 204, succeeded: true, response_body: '' });
      expect(second).toMatchObject({ status_code: 202, succeeded: true });
      expect(Buffer.byteLength(second!.response_body!)).toBeLessThanOrEqual(1024);
      expect(second!.response_body).toBe('é'.repeat(512));
    } finally {
      await r.close();
    }
  });

  test('an answer in any encoding is logged as text the attempts log holds, and delivered once', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    const r = await startReceiver(ca);
    const sibling = await startReceiver(ca);
    try {
      const odd = await webhookFor(d.db, agencyId, r.url);
      await webhookFor(d.db, agencyId, sibling.url);
      const answers: Buffer[] = [
        // A Windows-1252 page over the limit: every é is one invalid byte, three once decoded.
        Buffer.from(`${'a'.repeat(1020)}éé${'b'.repeat(100)}`, 'latin1'),
        Buffer.from('ok', 'utf16le'), // NUL bytes, which Postgres text refuses
        Buffer.from([0xff, 0xfe, 0x00, 0x01, 0xc3]),
      ];
      for (const [i, body] of answers.entries()) {
        r.answer = () => ({ status: 200, body });
        const event = makeEvent();
        await d.publish(agencyId, event);
        await waitFor(async () => (await listWebhookAttempts(d.db, odd.id)).length === i + 1);
        await waitFor(() => deliveredTo(sibling, event.id).length === 1);
      }
      const logged = (await listWebhookAttempts(d.db, odd.id)).reverse();
      expect(logged.map((a) => a.succeeded)).toEqual([true, true, true]);
      expect(logged.map((a) => a.response_body)).toEqual([
        `${'a'.repeat(1020)}\uFFFD`,
        'ok',
        '\uFFFD\uFFFD\u0001',
      ]);
      // Handled once: an attempt that failed to record would have sent the event out again.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(r.requests).toHaveLength(3);
      expect(sibling.requests).toHaveLength(3);
    } finally {
      await r.close();
      await sibling.close();
    }
  });

  test('while a secret is rotated, one v1= per active secret; an expired one no longer signs', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    const { id: webhookId, secret: oldSecret } = await webhookFor(d.db, agencyId, receiver.url);
    const newSecret = generateWebhookSecret();
    await d.db
      .updateTable('webhook_secrets')
      .set({ expires_at: sql<Date>`now() + interval '1 hour'` })
      .where('webhook_id', '=', webhookId)
      .execute();
    await d.db.insertInto('webhook_secrets').values({ webhook_id: webhookId, secret: newSecret }).execute();

    const during = makeEvent();
    await d.publish(agencyId, during);
    const [request] = await waitFor(
      () => deliveredTo(receiver, during.id).length > 0 && deliveredTo(receiver, during.id),
    );
    expect(request!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature(request!, oldSecret)).toBe(true);
    expect(verifySignature(request!, newSecret)).toBe(true);

    await d.changeHeard(agencyId, () =>
      d.db
        .updateTable('webhook_secrets')
        .set({ expires_at: sql<Date>`now() - interval '1 second'` })
        .where('secret', '=', oldSecret)
        .execute(),
    );
    const after = makeEvent();
    await d.publish(agencyId, after);
    const [later] = await waitFor(
      () => deliveredTo(receiver, after.id).length > 0 && deliveredTo(receiver, after.id),
    );
    expect(later!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(later!, newSecret)).toBe(true);
    expect(verifySignature(later!, oldSecret)).toBe(false);
  });
});

describe('who gets what', () => {
  test('only the active webhooks of the event’s agency subscribed to its type', async () => {
    const a = await agencyWithOwners(d.db, 'Agency A');
    const b = await agencyWithOwners(d.db, 'Agency B');
    const subscribed = await startReceiver(ca);
    const unsubscribed = await startReceiver(ca);
    const otherAgency = await startReceiver(ca);
    const switchedOff = await startReceiver(ca);
    try {
      await webhookFor(d.db, a.agencyId, subscribed.url, ['payment.paid']);
      await webhookFor(d.db, a.agencyId, unsubscribed.url, ['trip.created']);
      await webhookFor(d.db, b.agencyId, otherAgency.url, ['payment.paid']);
      const off = await webhookFor(d.db, a.agencyId, switchedOff.url, ['payment.paid']);
      await d.db
        .updateTable('webhooks')
        .set({ disabled_at: new Date(), disabled_reason: 'owner' })
        .where('id', '=', off.id)
        .execute();

      const events = [makeEvent('payment.paid'), makeEvent('payment.paid'), makeEvent('payment.paid')];
      for (const event of events) await d.publish(a.agencyId, event);
      // A marker for agency B proves B's webhook works, so its silence about A's events means something.
      const marker = makeEvent('payment.paid');
      await d.publish(b.agencyId, marker);

      await waitFor(() => subscribed.requests.length === 3 && otherAgency.requests.length === 1, {
        what: 'the subscribed deliveries',
      });
      // Every delivery of A's events is settled once its attempt is logged; then nothing else may arrive.
      await waitFor(() => d.outcomes.filter((o) => events.some((e) => e.id === o.eventId)).length === 3);
      expect(subscribed.requests.map((r) => r.headers['service-event-id']).sort()).toEqual(
        events.map((e) => e.id).sort(),
      );
      expect(otherAgency.requests.map((r) => r.headers['service-event-id'])).toEqual([marker.id]);
      expect(unsubscribed.requests).toHaveLength(0);
      expect(switchedOff.requests).toHaveLength(0);
    } finally {
      await Promise.all([subscribed, unsubscribed, otherAgency, switchedOff].map((r) => r.close()));
    }
  });

  test('one webhook hanging does not hold up another’s deliveries', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    const hanging = await startReceiver(ca);
    const healthy = await startReceiver(ca);
    try {
      hanging.answer = () => ({ delayMs: 60_000 });
      await webhookFor(d.db, agencyId, hanging.url, ['contact.created']);
      await webhookFor(d.db, agencyId, healthy.url, ['contact.created']);
      const events = Array.from({ length: 20 }, () => makeEvent('contact.created'));
      for (const event of events) await d.publish(agencyId, event);
      await waitFor(() => healthy.requests.length === 20, { what: 'the healthy webhook’s deliveries' });
      // Each hanging attempt lasts WEBHOOK_TIMEOUT (2 s); the healthy webhook never waited for one:
      // all its deliveries arrived before the first hanging attempt could have ended. (From the
      // first hanging request, not the first publish: publishing itself is slow on a busy machine.)
      expect(hanging.requests.length).toBeGreaterThan(0);
      const firstHanging = Math.min(...hanging.requests.map((r) => r.at));
      expect(Math.max(...healthy.requests.map((r) => r.at))).toBeLessThan(firstHanging + 2_000);
    } finally {
      await hanging.close();
      await healthy.close();
    }
  });
});

describe('the first attempt', () => {
  test('goes out from the event itself: nothing passes through the deliveries queue while webhooks have room', async () => {
    // A second consumer on the deliveries queue takes its share of whatever is published there
    // (and hands it straight back). With the first attempt queued as its own message, as before,
    // it saw about half of them.
    const connection = await amqplib.connect(amqpUrl);
    const channel = await connection.createChannel();
    const seen: string[] = [];
    await channel.prefetch(1);
    await channel.consume(topology(d.prefix, []).deliveriesQueue, (message) => {
      if (!message) return;
      // A retry goes this way by design: on a loaded machine a first attempt may time out.
      const { attempt } = JSON.parse(message.content.toString()) as { attempt: number };
      if (attempt === 1) seen.push(message.properties.messageId as string);
      channel.nack(message, false, true);
    });
    const { agencyId } = await agencyWithOwners(d.db);
    const first = await startReceiver(ca);
    const second = await startReceiver(ca);
    try {
      await webhookFor(d.db, agencyId, first.url, ['payment.paid']);
      await webhookFor(d.db, agencyId, second.url, ['payment.paid']);
      const events = Array.from({ length: 10 }, () => makeEvent('payment.paid'));
      for (const event of events) await d.publish(agencyId, event);
      await waitFor(() => first.requests.length === 10 && second.requests.length === 10, {
        what: 'every event at both webhooks',
      });
      expect(seen).toEqual([]);
    } finally {
      await connection.close();
      await first.close();
      await second.close();
    }
  });
});

describe('the SSRF guard on the delivery path', () => {
  test('with private networks refused, a webhook on a loopback address is never connected to', async () => {
    const strict = await startTestDispatcher({
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false',
    });
    try {
      const { agencyId } = await agencyWithOwners(strict.db);
      const canary = await startReceiver(ca);
      try {
        const viaName = await webhookFor(strict.db, agencyId, canary.url);
        const viaLiteral = await webhookFor(
          strict.db,
          agencyId,
          canary.url.replace('localhost', '127.0.0.1'),
        );
        const event = makeEvent();
        await strict.publish(agencyId, event);
        for (const webhook of [viaName, viaLiteral]) {
          const [attempt] = await waitFor(async () => {
            const rows = await listWebhookAttempts(strict.db, webhook.id);
            return rows.length > 0 && rows;
          });
          expect(attempt).toMatchObject({ succeeded: false, error: 'ssrf_blocked', status_code: null });
        }
        expect(canary.requests).toHaveLength(0);
      } finally {
        await canary.close();
      }
    } finally {
      await strict.cleanup();
    }
  });
});

describe('/metrics', () => {
  test('counts outcomes and attempt durations, and shows queue depths and open breakers', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    await webhookFor(d.db, agencyId, receiver.url, ['trip.deleted']);
    const event = makeEvent('trip.deleted');
    await d.publish(agencyId, event);
    await waitFor(() => d.outcomes.some((o) => o.eventId === event.id));

    const text = await (await fetch(`http://127.0.0.1:${d.service.healthPort}/metrics`)).text();
    const delivered = /^trips_deliveries_total\{outcome="delivered",service="dispatcher"\} (\d+)$/m.exec(
      text,
    );
    expect(Number(delivered?.[1])).toBe(d.outcomes.filter((o) => o.outcome.kind === 'delivered').length);
    expect(text).toMatch(
      /^trips_delivery_attempt_duration_seconds_count\{[^}]*result="success"[^}]*\} [1-9]\d*$/m,
    );
    for (const queue of ['events', 'deliveries', 'parked', 'retry_2000ms']) {
      expect(text).toMatch(
        new RegExp(`^trips_queue_depth\\{queue="${queue}",service="dispatcher"\\} \\d+$`, 'm'),
      );
    }
    expect(text).toMatch(/^trips_breakers_open\{service="dispatcher"\} \d+$/m);
    expect(text).toMatch(/^trips_held_deliveries\{service="dispatcher"\} \d+$/m);
    expect(text).toContain('trips_webhooks_switched_off_total{service="dispatcher"} 0');
  });
});

test.each([
  ['UTF-8 cut mid-character', Buffer.from('é'.repeat(600)), 'é'.repeat(512)],
  ['invalid bytes that grow when decoded', Buffer.alloc(1024, 0xe9), '\uFFFD'.repeat(341)],
  ['invalid bytes within the limit', Buffer.from([0x61, 0xe9, 0x62]), 'a\uFFFDb'],
  ['NUL', Buffer.from('a\0b'), 'ab'],
  ['nothing', Buffer.alloc(0), ''],
])('storableText: %s', (_what, bytes, text) => {
  const stored = storableText(bytes, 1024);
  expect(stored).toBe(text);
  expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(1024);
});
