import { objectUrl, type Event, type EventType } from '@trips/contracts';
import type { StoredEvent } from '@trips/db';

/**
 * The broker message for one recorded event: the thin event record of D6 (never object data) and
 * what routing needs. The lead moves this schema into packages/contracts; until then it lives here.
 *
 * AMQP properties: messageId = event id, type = event type, routing key = event type,
 * headers.agency_id = agency id, persistent, content type application/json.
 */
export interface EventMessage {
  agency_id: string;
  event: Event;
}

export const EVENT_MESSAGE_SCHEMA = {
  $id: 'https://trips.example/schemas/event-message.json',
  type: 'object',
  additionalProperties: false,
  required: ['agency_id', 'event'],
  properties: {
    agency_id: { type: 'string', pattern: '^agy_[0-9A-Za-z]+$' },
    event: {
      type: 'object',
      additionalProperties: false,
      required: ['object', 'id', 'type', 'created_at', 'related_object', 'data'],
      properties: {
        object: { const: 'event' },
        id: { type: 'string', pattern: '^evt_[0-9A-Za-z]+$' },
        type: { type: 'string' },
        created_at: { type: 'string', format: 'date-time' },
        related_object: {
          type: 'object',
          additionalProperties: false,
          required: ['type', 'id', 'url'],
          properties: {
            type: { enum: ['trip', 'payment', 'contact'] },
            id: { type: 'string' },
            url: { type: 'string' },
          },
        },
        data: { type: 'object' },
      },
    },
  },
} as const;

/** The public event record (D6) of a stored event: the body of webhooks and GET /events items. */
export function toEventRecord(
  e: Pick<StoredEvent, 'id' | 'type' | 'object_type' | 'object_id' | 'data' | 'created_at'>,
): Event {
  return {
    object: 'event',
    id: e.id,
    type: e.type as EventType,
    created_at: new Date(e.created_at).toISOString(),
    related_object: { type: e.object_type, id: e.object_id, url: objectUrl(e.object_type, e.object_id) },
    data: e.data,
  } as Event;
}

export function toMessage(e: StoredEvent): EventMessage {
  return { agency_id: e.agency_id, event: toEventRecord(e) };
}
