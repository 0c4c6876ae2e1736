import amqplib from 'amqplib';
import { topology } from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
import { createAgency } from '@trips/db/agencies';
import { ensureEventPartitions } from '@trips/db/events';
import { createUser } from '@trips/db/users';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  type TestDatabase,
} from '@trips/testkit';
import { createSettings, SettingsError, type Settings } from '../src/index.ts';

// What the settings tests start from: a database, the settings module on it, and the dispatcher's
// deliveries queue consumed in the dispatcher's stead; agencies with an owner and a planner.

export interface SettingsStack {
  t: TestDatabase;
  settings: Settings;
  /** What the settings module published to the deliveries queue, in arrival order (each persistent). */
  received: DeliveryMessage[];
  close(): Promise<void>;
}

export async function settingsStack(): Promise<SettingsStack> {
  const prefix = randomAmqpPrefix();
  const queue = topology(prefix, []).deliveriesQueue;
  const t = await createTestDatabase();
  const settings = createSettings({
    db: t.db,
    amqpUrls: [amqpUrl],
    amqpPrefix: prefix,
    eventRetentionMs: 2 * 86_400_000,
  });
  await ensureEventPartitions(t.db, new Date(Date.now() - 4 * 86_400_000), 6);
  // Stand in for the dispatcher: its deliveries queue, consumed here.
  const received: DeliveryMessage[] = [];
  const connection = await amqplib.connect(amqpUrl);
  const ch = await connection.createChannel();
  await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    expect(msg.properties.deliveryMode).toBe(2);
    received.push(JSON.parse(msg.content.toString('utf8')) as DeliveryMessage);
    ch.ack(msg);
  });
  return {
    t,
    settings,
    received,
    async close() {
      await connection.close().catch(() => {});
      await deleteAmqpObjects({ queues: [queue] });
      await t.drop();
    },
  };
}

export interface Agency {
  id: string;
  owner: { userId: string };
  planner: { userId: string };
}

let n = 0;
/** An agency with an owner and a planner, each with an address of their own. */
export async function newAgencyIn(t: TestDatabase): Promise<Agency> {
  const agency = await createAgency(t.db, { name: 'Fairway Tours' });
  n += 1;
  const owner = await createUser(t.db, {
    agencyId: agency.id,
    email: `owner${n}@fairway.example`,
    role: 'owner',
  });
  const planner = await createUser(t.db, {
    agencyId: agency.id,
    email: `planner${n}@fairway.example`,
    role: 'planner',
  });
  return { id: agency.id, owner: { userId: owner.id }, planner: { userId: planner.id } };
}

export const auditOf = (t: TestDatabase, agencyId: string) =>
  t.db.selectFrom('audit_log').selectAll().where('agency_id', '=', agencyId).orderBy('id').execute();

/** Awaits a refusal: a SettingsError with this code (and a message matching, if given). */
export async function refused(
  promise: Promise<unknown>,
  code: string,
  message?: RegExp,
): Promise<SettingsError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SettingsError);
  expect((error as SettingsError).code).toBe(code);
  if (message) expect((error as SettingsError).message).toMatch(message);
  return error as SettingsError;
}

export const newWebhookIn = (settings: Settings, a: Agency, eventTypes = ['trip.created', 'payment.paid']) =>
  settings.createWebhook(a.owner, { agencyId: a.id, url: 'https://hooks.fairway.example/t', eventTypes });
