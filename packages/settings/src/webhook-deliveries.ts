import { randomBytes } from 'node:crypto';
import { PUBLISH_TIMEOUT_MS, topology } from '@trips/broker';
import {
  EVENT_TYPES,
  eventRecord,
  ID_PREFIXES,
  isEventType,
  isTestEventId,
  TEST_EVENT_ID_PREFIX,
  TRIP_STATUSES,
} from '@trips/contracts';
import type { DeliveryMessage, EventSource } from '@trips/contracts';
import type { WebhookRow } from '@trips/db';
import { countEventsForRedelivery, eventsForRedelivery, findRecordedEvent } from '@trips/db/events';
import type { Actor } from './access.ts';
import { audit } from './audit.ts';
import type { SettingsContext, SettingsOptions } from './context.ts';
import { invalid, SettingsError } from './errors.ts';
import { publishDeliveries } from './publisher.ts';
import { findWebhook } from './webhooks.ts';

const DEFAULT_RETENTION_MS = 30 * 24 * 3600_000;
const REDELIVERY_PAGE = 500;

export interface RedeliveryProgress {
  done: number;
  total: number;
}

/** Publishes to the dispatcher's deliveries queue, or refuses with `unavailable` without RabbitMQ. */
function deliveryPublisher(options: SettingsOptions) {
  const deliveriesQueue = topology(options.amqpPrefix ?? '', []).deliveriesQueue;

  function requireBroker(): readonly string[] {
    if (!options.amqpUrls?.length)
      throw new SettingsError('unavailable', 'no RabbitMQ configured (AMQP_URL).');
    return options.amqpUrls;
  }

  const publish = (
    amqpUrls: readonly string[],
    deliveries: AsyncIterable<DeliveryMessage[]>,
    onPublished?: (count: number) => void,
  ) =>
    publishDeliveries(amqpUrls, deliveriesQueue, deliveries, {
      timeoutMs: options.brokerTimeoutMs ?? PUBLISH_TIMEOUT_MS,
      ...(onPublished && { onPublished }),
    });

  return { requireBroker, publish };
}

function requireOn(webhook: WebhookRow): void {
  if (webhook.disabled_at) {
    throw invalid(
      `webhook ${webhook.id} is switched off; switch it back on first, nothing is delivered to it now.`,
    );
  }
}

const delivery = (webhook: WebhookRow, source: EventSource): DeliveryMessage => ({
  webhook_id: webhook.id,
  agency_id: webhook.agency_id,
  epoch: webhook.epoch,
  event: eventRecord(source),
  attempt: 1,
  first_failed_at: null,
});

/** The agency's recorded event to send again to the webhook, or `invalid` with the reason. */
async function eventToResend(
  db: SettingsContext['db'],
  webhook: WebhookRow,
  eventId: string,
  retentionMs: number,
) {
  if (isTestEventId(eventId)) {
    throw invalid('a test event is not kept, so it cannot be sent again; send a new test event.');
  }
  const event = /^evt_[0-9A-Za-z_-]{1,100}$/.test(eventId)
    ? await findRecordedEvent(db, {
        agencyId: webhook.agency_id,
        id: eventId,
        notAfter: new Date(),
        retentionMs,
      })
    : undefined;
  if (!event) {
    throw invalid(
      `event ${eventId.slice(0, 120)} is not in your agency's event record: events are kept ${Math.round(retentionMs / 3600_000)} hours (EVENT_RETENTION).`,
    );
  }
  if (!webhook.event_types.includes(event.type)) {
    throw invalid(`the webhook no longer receives ${event.type} events; add that type first.`);
  }
  return event;
}

/**
 * Test events and redelivery: they change nothing in the database and run in no transaction (see
 * sendTestEvent); they are audited once RabbitMQ has confirmed them.
 */
export function webhookDeliveryActions({ db, options }: SettingsContext) {
  const retentionMs = options.eventRetentionMs ?? DEFAULT_RETENTION_MS;
  const { requireBroker, publish } = deliveryPublisher(options);

  return {
    /**
     * Queues a test delivery: an event of the webhook's first subscribed type with an id
     * `evt_test_…` about a placeholder object (`trp_test`, `pay_test` or `con_test`) that does not
     * exist. It is delivered, signed and logged like any other, but is not in the event record.
     */
    async sendTestEvent(actor: Actor, id: string) {
      const amqpUrls = requireBroker();
      // No transaction: none may stay open while RabbitMQ is asked (it holds a connection of the
      // pool, and locks). Published first, then audited; the audit insert failing after a
      // publish that worked is the one way a test delivery goes unaudited.
      const { webhook, who } = await findWebhook(db, actor, id);
      requireOn(webhook);
      const type = webhook.event_types.find(isEventType) ?? 'trip.updated';
      const objectType = EVENT_TYPES[type].object;
      const source: EventSource = {
        id: `${TEST_EVENT_ID_PREFIX}${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`,
        type,
        object_type: objectType,
        object_id: `${ID_PREFIXES[objectType]}test`,
        data:
          EVENT_TYPES[type].data === 'status_change' ? { from: TRIP_STATUSES[0], to: TRIP_STATUSES[1] } : {},
        created_at: new Date(),
      };
      const message = delivery(webhook, source);
      await publish(
        amqpUrls,
        (async function* () {
          yield [message];
        })(),
      );
      await audit(db, who, webhook.agency_id, 'webhook.test_sent', 'webhook', id, {
        event_id: message.event.id,
        event_type: type,
      });
      return { webhook_id: id, event: message.event };
    },

    /**
     * Queues the agency's recorded events of the webhook's types since `since` (within
     * EVENT_RETENTION), oldest first, as fresh deliveries to this one webhook. Receivers dedupe by
     * event id (spec 6.5), so one already received does no harm.
     */
    async redeliver(
      actor: Actor,
      id: string,
      input: { since: Date; onProgress?: (progress: RedeliveryProgress) => void },
    ) {
      const since = input.since;
      if (!(since instanceof Date) || Number.isNaN(since.getTime())) throw invalid('since is not a time.');
      const now = Date.now();
      if (since.getTime() > now) throw invalid('since is in the future.');
      if (since.getTime() < now - retentionMs) {
        throw invalid(
          `since is outside the retention window: events are kept ${Math.round(retentionMs / 3600_000)} hours ` +
            `(EVENT_RETENTION), so redeliver from ${new Date(now - retentionMs).toISOString()} at the earliest.`,
        );
      }
      const amqpUrls = requireBroker();
      // As for a test event, no transaction while publishing: a long redelivery inside one also
      // held a lock on events that the recorder's daily partition change waits behind, and every
      // GET /events behind that. Each page is its own query; events only ever append, so paging
      // by seq needs no snapshot.
      const { webhook, who } = await findWebhook(db, actor, id);
      requireOn(webhook);
      const query = { agencyId: webhook.agency_id, since, types: webhook.event_types };
      const total = await countEventsForRedelivery(db, query);
      input.onProgress?.({ done: 0, total });
      async function* pages() {
        let afterSeq = 0;
        for (;;) {
          const rows = await eventsForRedelivery(db, { ...query, afterSeq, limit: REDELIVERY_PAGE });
          if (rows.length === 0) return;
          yield rows.map((row) => delivery(webhook, row));
          afterSeq = rows[rows.length - 1]!.seq;
          if (rows.length < REDELIVERY_PAGE) return;
        }
      }
      const count = await publish(amqpUrls, pages(), (done) =>
        input.onProgress?.({ done, total: Math.max(total, done) }),
      );
      await audit(db, who, webhook.agency_id, 'webhook.redelivered', 'webhook', id, {
        since: since.toISOString(),
        events: count,
      });
      return { webhook_id: id, since, events: count };
    },

    /**
     * Sends one recorded event of the agency to this webhook again, as a fresh delivery (attempt
     * 1): "send this event again" on one delivery of the log. Audited like a redelivery, with the
     * event's id. A test event is in no record, and an event past EVENT_RETENTION is gone: both
     * are refused as `invalid`.
     */
    async resendEvent(actor: Actor, id: string, eventId: string) {
      const { webhook, who } = await findWebhook(db, actor, id);
      requireOn(webhook);
      const event = await eventToResend(db, webhook, eventId, retentionMs);
      const amqpUrl = requireBroker();
      const message = delivery(webhook, event as EventSource);
      await publish(
        amqpUrl,
        (async function* () {
          yield [message];
        })(),
      );
      await audit(db, who, webhook.agency_id, 'webhook.redelivered', 'webhook', id, {
        event_id: event.id,
        events: 1,
      });
      return { webhook_id: id, event: message.event };
    },
  };
}
