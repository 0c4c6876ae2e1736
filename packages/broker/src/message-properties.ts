// The properties every message of the system carries, written once: the recorder's event messages,
// and the delivery messages the dispatcher (retries) and the settings module (test events,
// redelivery) put on the dispatcher's queues. Consumers and operators read them without parsing
// the body: messageId is the event id (duplicates of one event share it), type its event type.
//
// The header `captured_at` (ISO 8601, milliseconds) is when the event's change was captured in its
// writer's transaction (for a grouped `*.updated` event, its group's first change), for the commit →
// delivery lag (docs/design/metrics.md). A header rather than a field of the body: the bodies' schemas
// refuse unknown fields, and a dispatcher of the previous version would park the message during a
// rolling update; headers it does not know it ignores, and RabbitMQ keeps them through the delay
// queues. A message without it (from a version before it, an owner's redelivery, a test event)
// is not timed.
import type { Options } from 'amqplib';
import type { DeliveryMessage } from '@trips/contracts';

/** A recorded event, as much as its message's properties need (the db's StoredEvent is one). */
export interface RecordedEvent {
  id: string;
  type: string;
  agency_id: string;
  created_at: Date;
  /** When its change was captured in its writer's transaction; null or absent when not known. */
  captured_at?: Date | null;
}

const CAPTURED_AT = 'captured_at';

/** The properties of an event message published to the events exchange (a JSON EventMessage). */
export function eventMessageProperties(e: RecordedEvent): Options.Publish {
  return {
    persistent: true,
    contentType: 'application/json',
    messageId: e.id,
    type: e.type,
    timestamp: Math.floor(new Date(e.created_at).getTime() / 1000),
    headers: { agency_id: e.agency_id, ...capturedAtHeader(e.captured_at) },
  };
}

/**
 * The properties of a delivery message (a JSON DeliveryMessage) to the deliveries or a delay queue,
 * with the capture time of its event's change when known (`capturedAt`, from the event message).
 */
export function deliveryMessageProperties(delivery: DeliveryMessage, capturedAt?: Date): Options.Publish {
  return {
    persistent: true,
    contentType: 'application/json',
    messageId: delivery.event.id,
    type: delivery.event.type,
    headers: { webhook_id: delivery.webhook_id, ...capturedAtHeader(capturedAt) },
  };
}

const capturedAtHeader = (at: Date | null | undefined) =>
  at ? { [CAPTURED_AT]: new Date(at).toISOString() } : {};

/**
 * When the event of a consumed message was captured, from its headers; undefined when the message
 * carries no such header, or one that is not a time (then the lag is not observed rather than guessed).
 */
export function capturedAtOf(headers: Record<string, unknown> | undefined): Date | undefined {
  const value = headers?.[CAPTURED_AT];
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
