import { EVENT_TYPES, isEventType } from './events.ts';
import { objectUrl, type ObjectType } from './objects.ts';
import type { JsonSchema } from './schemas.ts';
import type { Event } from './types.ts';

/**
 * What the services say to each other over RabbitMQ. Not public API: the recorder publishes
 * EventMessage, the dispatcher turns each into one DeliveryMessage per subscribed webhook. Both
 * carry the public event record (D6) and nothing of the object, so no message holds data a
 * webhook's agency could not read.
 */

/**
 * Published by the recorder to the `trips.events` topic exchange, routing key = event type.
 * AMQP properties: messageId = event id, type = event type, headers.agency_id, persistent.
 */
export interface EventMessage {
  agency_id: string;
  event: Event;
}

/** One delivery of one event to one webhook, queued for an attempt (first or retry). */
export interface DeliveryMessage {
  webhook_id: string;
  agency_id: string;
  /** The webhook's epoch when the delivery was made; a switch-off bumps it, dropping the rest. */
  epoch: number;
  event: Event;
  /** The number of the next attempt, from 1. */
  attempt: number;
  /** When this delivery first failed (ms since the epoch), null before any failure. */
  first_failed_at: number | null;
  /**
   * Attempts the receiver answered by asking to wait a short while (429, 503: D10). The retry
   * schedule counts the others only: the schedule's step is `attempt - waits`. Absent: none.
   */
  waits?: number;
  /**
   * Written by dispatchers before webhook lanes (a saturated webhook's deliveries then went round
   * delay queues, each time longer); still accepted so such messages in flight are delivered, and
   * never written now.
   */
  busy_deferrals?: number;
}

const eventRef = { $ref: '#/components/schemas/Event' };

export const MESSAGE_SCHEMAS = {
  EventMessage: {
    type: 'object',
    additionalProperties: false,
    required: ['agency_id', 'event'],
    properties: {
      agency_id: { type: 'string', pattern: '^agy_[0-9A-Za-z]+$' },
      event: eventRef,
    },
  },
  DeliveryMessage: {
    type: 'object',
    additionalProperties: false,
    required: ['webhook_id', 'agency_id', 'epoch', 'event', 'attempt', 'first_failed_at'],
    properties: {
      webhook_id: { type: 'string', pattern: '^whk_[0-9A-Za-z]+$' },
      agency_id: { type: 'string', pattern: '^agy_[0-9A-Za-z]+$' },
      epoch: { type: 'integer', minimum: 1 },
      event: eventRef,
      attempt: { type: 'integer', minimum: 1 },
      first_failed_at: { type: ['integer', 'null'], minimum: 0 },
      waits: { type: 'integer', minimum: 1 },
      busy_deferrals: { type: 'integer', minimum: 1 },
    },
  },
} as const satisfies Record<string, JsonSchema>;

/** A recorded event as stored (the columns the record is made of). */
export interface EventSource {
  id: string;
  type: string;
  object_type: ObjectType;
  object_id: string;
  data: Record<string, unknown>;
  created_at: Date | string;
}

/**
 * The public event record (D6): the body of a webhook and an item of GET /events, made in this one
 * place so the two are byte for byte the same. Nothing but the id, type, time, object reference and
 * data; the property order here is the order receivers see.
 */
export function eventRecord(e: EventSource): Event {
  return {
    object: 'event',
    id: e.id,
    type: e.type,
    created_at: new Date(e.created_at).toISOString(),
    related_object: { type: e.object_type, id: e.object_id, url: objectUrl(e.object_type, e.object_id) },
    data: presentData(e.type, e.data),
  } as Event;
}

/** `data.from` before `data.to`, as D6 shows it (jsonb keeps keys in its own order). */
function presentData(type: string, data: Record<string, unknown>): Record<string, unknown> {
  if (isEventType(type) && EVENT_TYPES[type].data === 'status_change')
    return { from: data.from, to: data.to };
  return data;
}
