import amqplib from 'amqplib';
import type { Kysely } from 'kysely';
import { eventMessageProperties, queueNames, topology } from '@trips/broker';
import { eventRecord, type Event, type EventType, type EventMessage } from '@trips/contracts';
import type { Database } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createUser } from '@trips/db/users';
import { createWebhook } from '@trips/db/webhooks';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  randomAmqpPrefix,
  waitFor,
  type TestDatabase,
} from '@trips/testkit';
import {
  readConfig,
  startDispatcherService,
  type DispatcherHooks,
  type DispatcherService,
  type Outcome,
} from '../src/index.ts';
import type { TargetsCacheEvent } from '../src/targets-listener.ts';

export interface TestDispatcher {
  db: Kysely<Database>;
  database: TestDatabase;
  prefix: string;
  logs: LogCapture;
  outcomes: { outcome: Outcome; webhookId: string; eventId: string; attempt: number; at: number }[];
  /** What the dispatcher heard of webhook changes, and when its cache started or stopped being used. */
  targetsEvents: { event: TargetsCacheEvent; at: number }[];
  service: DispatcherService;
  /**
   * Makes a change of the agency's webhooks and waits until the dispatcher has heard of it (its
   * NOTIFY): from then on every lookup sees it. Answers the change's result.
   */
  changeHeard<T>(agencyId: string, change: () => Promise<T>): Promise<T>;
  /**
   * Publishes an event as the recorder would; with `capturedAt`, the capture time of its change in
   * the message's headers, as the recorder sends it.
   */
  publish(agencyId: string, event: Event, capturedAt?: Date): Promise<void>;
  /** Stops the service (idempotent). */
  stop(): Promise<void>;
  /** Stops everything and removes the database and queues. */
  cleanup(): Promise<void>;
}

/**
 * A dispatcher on a fresh database and a random queue prefix, with the test's settings. Defaults
 * suit tests: private networks allowed (receivers are local), seconds instead of hours.
 */
export async function startTestDispatcher(
  env: Record<string, string> = {},
  hooks: DispatcherHooks = {},
  /** Another dispatcher's database and queues: this one is then a second replica. */
  replicaOf?: TestDispatcher,
): Promise<TestDispatcher> {
  const database = replicaOf?.database ?? (await createTestDatabase());
  const prefix = replicaOf?.prefix ?? randomAmqpPrefix();
  const settings = {
    DATABASE_URL: database.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    DISPATCHER_HEALTH_PORT: '0',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_DELAYS: '1s,2s,3s',
    WEBHOOK_FAILURE_WINDOW: '10s',
    WEBHOOK_TIMEOUT: '2s',
    DISPATCHER_STOP_TIMEOUT: '5s',
    ...env,
  };
  const config = readConfig(settings);
  const logs = new LogCapture();
  const outcomes: TestDispatcher['outcomes'] = [];
  const targetsEvents: TestDispatcher['targetsEvents'] = [];
  const service = await startDispatcherService(config, logs.logger, {
    ...hooks,
    onTargetsCache: (event) => {
      targetsEvents.push({ event, at: Date.now() });
      hooks.onTargetsCache?.(event);
    },
    onOutcome: (outcome, delivery) => {
      outcomes.push({
        outcome,
        webhookId: delivery.webhook_id,
        eventId: delivery.event.id,
        attempt: delivery.attempt,
        at: Date.now(),
      });
      hooks.onOutcome?.(outcome, delivery);
    },
  });
  const names = topology(prefix, config.policy.queueDelaysMs);
  const connection = await amqplib.connect(amqpUrl);
  const channel = await connection.createConfirmChannel();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await service.stop();
  };
  return {
    db: database.db,
    database,
    prefix,
    logs,
    outcomes,
    targetsEvents,
    service,
    changeHeard: async (agencyId, change) => {
      const from = targetsEvents.length;
      const result = await change();
      await waitFor(
        () =>
          targetsEvents
            .slice(from)
            .some(
              ({ event }) => event === 'all' || (typeof event === 'object' && event.agencyId === agencyId),
            ),
        {
          timeoutMs: 5_000,
          intervalMs: 5,
          what: `the dispatcher to hear of the change of ${agencyId}'s webhooks`,
        },
      );
      return result;
    },
    publish: async (agencyId, event, capturedAt) => {
      const message: EventMessage = { agency_id: agencyId, event };
      const recorded = { ...event, agency_id: agencyId, created_at: new Date(event.created_at) };
      channel.publish(names.eventsExchange, event.type, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        messageId: event.id,
        contentType: 'application/json',
        ...(capturedAt && {
          headers: eventMessageProperties({ ...recorded, captured_at: capturedAt }).headers,
        }),
      });
      await channel.waitForConfirms();
    },
    stop,
    cleanup: async () => {
      await stop();
      await connection.close().catch(() => {});
      if (replicaOf) return; // the first replica owns the database and queues
      await deleteAmqpObjects({
        queues: queueNames(names),
        exchanges: [names.eventsExchange, names.expressExchange],
      });
      await database.drop();
    },
  };
}

let counter = 0;

/** A synthetic event record as the recorder makes them (ids are unique per test run). */
export function makeEvent(type: EventType = 'trip.created', objectId?: string): Event {
  const id = `evt_${Date.now().toString(36)}${(++counter).toString().padStart(6, '0')}`;
  const objectType = type.split('.')[0] as 'trip' | 'payment' | 'contact';
  const prefix = { trip: 'trp', payment: 'pay', contact: 'con' }[objectType];
  return eventRecord({
    id,
    type,
    object_type: objectType,
    object_id: objectId ?? `${prefix}_obj${++counter}`,
    data: type === 'trip.status_changed' ? { from: 'planning', to: 'confirmed' } : {},
    created_at: new Date(),
  });
}

/** An agency with two owners and a planner. */
export async function agencyWithOwners(db: Kysely<Database>, name = 'Fairway Tours') {
  const agency = await createAgency(db, { name, apiEnabled: true, subscriptionStatus: 'active' });
  const tag = agency.id.slice(-6).toLowerCase();
  const owners = [`owner1-${tag}@example.com`, `owner2-${tag}@example.com`];
  for (const email of owners) await createUser(db, { agencyId: agency.id, email, role: 'owner' });
  await createUser(db, { agencyId: agency.id, email: `planner-${tag}@example.com`, role: 'planner' });
  return { agencyId: agency.id, owners };
}

export async function webhookFor(
  db: Kysely<Database>,
  agencyId: string,
  url: string,
  eventTypes: string[] = ['trip.created', 'trip.status_changed', 'payment.paid'],
) {
  const { webhook, secret } = await createWebhook(db, { agencyId, url, eventTypes });
  return { id: webhook.id, secret };
}
