import { OBJECTS, type ObjectType } from './objects.ts';
import type { Scope } from './scopes.ts';

interface EventTypePolicy {
  /** The type of the object the event refers to (its `related_object.type`). */
  object: ObjectType;
  /**
   * Grouped types wait until the object has been quiet for a while before one event is made
   * (interface.md 6, rule 1); the others are made at once.
   */
  grouped: boolean;
  /** What `data` carries: the old and new status, or nothing (decisions.md D6). */
  data: 'status_change' | 'none';
  /** When the event is made, as the spec words it; shown in the reference documentation. */
  when: string;
}

/**
 * The event catalogue of interface.md section 6, as one table. The recorder classifies changes by
 * it, the API filters by it and the schemas and documentation are generated from it, so a new
 * type is one new row.
 */
export const EVENT_TYPES = {
  'trip.created': {
    object: 'trip',
    grouped: false,
    data: 'none',
    when: 'A trip was created (a template turned into a trip counts too).',
  },
  'trip.status_changed': {
    object: 'trip',
    grouped: false,
    data: 'status_change',
    when: 'The trip status changed; data.from and data.to give the old and new status.',
  },
  'trip.accepted': {
    object: 'trip',
    grouped: false,
    data: 'none',
    when: 'The client accepted the proposal.',
  },
  'trip.published': { object: 'trip', grouped: false, data: 'none', when: 'The client page went live.' },
  'trip.unpublished': {
    object: 'trip',
    grouped: false,
    data: 'none',
    when: 'The client page was withdrawn.',
  },
  'trip.updated': {
    object: 'trip',
    grouped: true,
    data: 'none',
    when: 'Anything else about the trip changed: title, dates, itinerary, travellers, page texts, or one of its options.',
  },
  'trip.deleted': {
    object: 'trip',
    grouped: false,
    data: 'none',
    when: 'The trip was deleted or turned into a template.',
  },
  'payment.created': {
    object: 'payment',
    grouped: false,
    data: 'none',
    when: 'A payment was shown to the client; a payment still being prepared makes no event.',
  },
  'payment.paid': { object: 'payment', grouped: false, data: 'none', when: 'A payment was paid in full.' },
  'payment.updated': {
    object: 'payment',
    grouped: true,
    data: 'none',
    when: 'Something else about a payment the client sees changed.',
  },
  'payment.deleted': {
    object: 'payment',
    grouped: false,
    data: 'none',
    when: 'A payment was cancelled or deleted so the client no longer sees it.',
  },
  'contact.created': { object: 'contact', grouped: false, data: 'none', when: 'A contact was created.' },
  'contact.updated': {
    object: 'contact',
    grouped: true,
    data: 'none',
    when: 'A contact changed, or joined or left a trip.',
  },
  'contact.deleted': { object: 'contact', grouped: false, data: 'none', when: 'A contact was deleted.' },
} as const satisfies Record<string, EventTypePolicy>;

export type EventType = keyof typeof EVENT_TYPES;

export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_TYPES, value);
}

/** Whether events of this type wait for their group (`*.updated`); false for a type not known. */
export function isGroupedType(type: string): boolean {
  return isEventType(type) && EVENT_TYPES[type].grouped;
}

/** The scope a key needs to see an event of this type (decisions.md D2). */
export function scopeForEventType(type: EventType): Scope {
  return OBJECTS[EVENT_TYPES[type].object].scope;
}

/** The event types of one object type, in catalogue order. */
export function eventTypesOf(object: ObjectType): EventType[] {
  return EVENT_TYPE_NAMES.filter((type) => EVENT_TYPES[type].object === object);
}
