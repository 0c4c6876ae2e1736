// The properties every message of the system carries, written once: the recorder's event messages,
// and the delivery messages the dispatcher (retries) and the settings module (test events,
// redelivery) put on the dispatcher's queues. Consumers and operators read them without parsing
// the body: messageId is the event id (duplicates of one event share it), type its event type.
import type { Options } from 'amqplib';
import type { DeliveryMessage } from '@trips/contracts';

/** A recorded event, as much as its message's properties need (the db's StoredEvent is one). */
export interface RecordedEvent {
  id: string;
  type: string;
  agency_id: string;
  created_at: Date;
}

/** The properties of an event message published to the events exchange (a JSON EventMessage). */
export function eventMessageProperties(e: RecordedEvent): Options.Publish {
  return {
    persistent: true,
    contentType: 'application/json',
    messageId: e.id,
    type: e.type,
    timestamp: Math.floor(new Date(e.created_at).getTime() / 1000),
    headers: { agency_id: e.agency_id },
  };
}

/** The properties of a delivery message (a JSON DeliveryMessage) to the deliveries or a delay queue. */
export function deliveryMessageProperties(delivery: DeliveryMessage): Options.Publish {
  return {
    persistent: true,
    contentType: 'application/json',
    messageId: delivery.event.id,
    type: delivery.event.type,
    headers: { webhook_id: delivery.webhook_id },
  };
}
