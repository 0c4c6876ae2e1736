import { ID_PREFIXES } from './ids.ts';
import type { Scope } from './scopes.ts';

/** The version is part of the path (interface.md 9). */
export const API_BASE_PATH = '/api/v1';

/**
 * The public object types, in one table: where each is read, the scope a key needs to read it
 * (decisions.md D2) and the prefix of its ids. Events refer to exactly these types, and a key
 * sees an event only if it holds the scope of the event's object.
 */
export const OBJECTS = {
  trip: { collection: 'trips', scope: 'trips:read', idPrefix: ID_PREFIXES.trip },
  payment: { collection: 'payments', scope: 'payments:read', idPrefix: ID_PREFIXES.payment },
  contact: { collection: 'contacts', scope: 'contacts:read', idPrefix: ID_PREFIXES.contact },
} as const satisfies Record<string, { collection: string; scope: Scope; idPrefix: string }>;

export type ObjectType = keyof typeof OBJECTS;

export const OBJECT_TYPES = Object.keys(OBJECTS) as ObjectType[];

/** Where an object is read: the `url` of an event's `related_object`. */
export function objectUrl(type: ObjectType, id: string): string {
  return `${API_BASE_PATH}/${OBJECTS[type].collection}/${encodeURIComponent(id)}`;
}

/** interface.md 2.1, in life order from proposal to completed, then the two ends that are not. */
export const TRIP_STATUSES = [
  'proposal',
  'planning',
  'confirmed',
  'active',
  'completed',
  'declined',
  'cancelled',
] as const;

export type TripStatus = (typeof TRIP_STATUSES)[number];

/** Drafts and cancelled payments are invisible (D5), so a visible payment is one of these. */
export const PAYMENT_STATUSES = ['open', 'paid'] as const;

export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
