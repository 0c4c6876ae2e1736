import { createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'kysely';
import { isValid, type DeliveryMessage } from '@trips/contracts';
import { waitFor, type TestDatabase } from '@trips/testkit';
import { createSettings, type Settings } from '../src/index.ts';
import {
  auditOf as auditRowsOf,
  newAgencyIn,
  newWebhookIn,
  refused,
  settingsStack,
  type Agency,
  type SettingsStack,
} from './support.ts';

let stack: SettingsStack;
let t: TestDatabase;
let settings: Settings;
let received: DeliveryMessage[];

beforeAll(async () => {
  stack = await settingsStack();
  ({ t, settings, received } = stack);
});
afterAll(() => stack?.close());

const newAgency = () => newAgencyIn(t);
const auditOf = (agencyId: string) => auditRowsOf(t, agencyId);
const newWebhook = (a: Agency, eventTypes?: string[]) => newWebhookIn(settings, a, eventTypes);

describe('test events and redelivery reach the deliveries queue', () => {
  test('a test event is a valid DeliveryMessage for that webhook only, and audited', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a, ['trip.status_changed', 'trip.created']);
    const result = await settings.sendTestEvent(a.owner, webhook.id);
    expect(result.event.id).toMatch(/^evt_test_/);
    await waitFor(() => received.some((m) => m.event.id === result.event.id), { timeoutMs: 5_000 });
    const message = received.find((m) => m.event.id === result.event.id)!;
    expect(isValid('DeliveryMessage', message)).toBe(true);
    expect(message).toMatchObject({ webhook_id: webhook.id, agency_id: a.id, epoch: 1, attempt: 1 });
    expect(message.event).toMatchObject({
      type: 'trip.status_changed',
      related_object: { type: 'trip', id: 'trp_test' },
    });
    expect((await auditOf(a.id)).at(-1)).toMatchObject({
      action: 'webhook.test_sent',
      details: { event_id: result.event.id, event_type: 'trip.status_changed' },
    });
  });

  test('redeliver sends the events since a time, of the webhook types, oldest first, with progress', async () => {
    const a = await newAgency();
    const other = await newAgency();
    const { webhook } = await newWebhook(a, ['trip.created', 'payment.paid']);
    const insert = (agencyId: string, type: string, objectType: string, hoursAgo: number) =>
      sql<{ id: string }>`
        INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
        VALUES (nextval('events_seq'), gen_id('evt'), ${agencyId}, ${type}, ${objectType}, ${`${objectType === 'trip' ? 'trp' : 'pay'}_X${hoursAgo}`},
                '{}'::jsonb, now() - make_interval(hours => ${hoursAgo}))
        RETURNING id`
        .execute(t.db)
        .then((r) => r.rows[0]!.id);
    await insert(a.id, 'trip.created', 'trip', 30); // before since
    const e1 = await insert(a.id, 'trip.created', 'trip', 20);
    await insert(a.id, 'trip.deleted', 'trip', 10); // not subscribed
    await insert(other.id, 'trip.created', 'trip', 5); // another agency
    const e2 = await insert(a.id, 'payment.paid', 'payment', 2);

    const progress: { done: number; total: number }[] = [];
    const result = await settings.redeliver(a.owner, webhook.id, {
      since: new Date(Date.now() - 24 * 3600_000),
      onProgress: (p) => progress.push(p),
    });
    expect(result.events).toBe(2);
    expect(progress[0]).toEqual({ done: 0, total: 2 });
    expect(progress.at(-1)).toEqual({ done: 2, total: 2 });
    await waitFor(() => received.filter((m) => m.webhook_id === webhook.id).length >= 2, {
      timeoutMs: 5_000,
    });
    const mine = received.filter((m) => m.webhook_id === webhook.id);
    expect(mine.map((m) => m.event.id)).toEqual([e1, e2]);
    for (const m of mine) expect(isValid('DeliveryMessage', m)).toBe(true);
    expect((await auditOf(a.id)).at(-1)).toMatchObject({
      action: 'webhook.redelivered',
      details: { events: 2 },
    });
  });

  test('since outside the retention window, or a switched-off webhook: refused, nothing published', async () => {
    const a = await newAgency();
    const { webhook } = await newWebhook(a);
    const before = await auditOf(a.id);
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 3 * 86_400_000) }),
      'invalid',
      /retention/,
    );
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() + 60_000) }),
      'invalid',
    );
    await settings.setWebhookEnabled(a.owner, webhook.id, false);
    await refused(settings.sendTestEvent(a.owner, webhook.id), 'invalid', /switched off/);
    await refused(
      settings.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 60_000) }),
      'invalid',
    );
    expect((await auditOf(a.id)).length).toBe(before.length + 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(received.filter((m) => m.webhook_id === webhook.id)).toEqual([]);
  });

  test('a broker that never answers: unavailable within the timeout, and no transaction open meanwhile', async () => {
    // Accepts the connection and says nothing, as RabbitMQ blocked by an alarm says nothing to a
    // publisher; a transaction held across the wait would hold a pool connection and a lock on
    // events (and list sync, once it writes) for as long.
    const sockets: Socket[] = [];
    const mute = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const port = (mute.address() as AddressInfo).port;
    const silent = createSettings({
      db: t.db,
      amqpUrls: [`amqp://127.0.0.1:${port}`],
      brokerTimeoutMs: 1_000,
    });
    const openTransactions = async () => {
      const { rows } = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
      `.execute(t.db);
      return rows[0]!.n;
    };
    try {
      const a = await newAgency();
      const { webhook } = await newWebhook(a);
      const before = await auditOf(a.id);
      for (const attempt of [
        () => silent.sendTestEvent(a.owner, webhook.id),
        () => silent.redeliver(a.owner, webhook.id, { since: new Date(Date.now() - 60_000) }),
      ]) {
        const started = Date.now();
        const connected = sockets.length;
        const outcome = refused(attempt(), 'unavailable', /RabbitMQ/);
        await waitFor(() => sockets.length > connected);
        expect(await openTransactions()).toBe(0);
        await outcome;
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      expect(await auditOf(a.id)).toEqual(before);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => mute.close(resolve));
    }
  });
});
