import { eventRecord, type EventMessage } from '@trips/contracts';
import type { StoredEvent } from '@trips/db/events';

/** The broker message for one recorded event (schema: packages/contracts messages.ts). */
export function toMessage(e: StoredEvent): EventMessage {
  return { agency_id: e.agency_id, event: eventRecord(e) };
}
