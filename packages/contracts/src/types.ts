import type { ErrorCode } from './errors.ts';
import type { EVENT_TYPES, EventType } from './events.ts';
import type { ObjectType, PaymentStatus, TripStatus } from './objects.ts';

// The public objects as TypeScript sees them. schemas.ts says the same in JSON Schema, with the
// rules types cannot express (formats, patterns, "url exactly when published"); the tests check
// that typed examples pass the schemas, so the two cannot drift silently.

/** ISO 8601 UTC with milliseconds, e.g. `2026-11-21T10:15:30.123Z` (D4). */
export type Timestamp = string;
/** `YYYY-MM-DD` (D4). */
export type DateString = string;

/** interface.md 2.1. */
export interface Trip {
  object: 'trip';
  id: string;
  title: string;
  status: TripStatus;
  destination: { region: string | null; base_camp: string | null };
  dates: {
    mode: 'fixed' | 'flexible';
    start_date: DateString | null;
    end_date: DateString | null;
    num_days: number;
  };
  /** `non_golfers` is always null in lists, and on retrieval null unless the trip has an itinerary. */
  travelers: { golfers: number; non_golfers: number | null };
  client_page: { published: boolean; url: string | null };
  accepted_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** decisions.md D5. */
export interface Payment {
  object: 'payment';
  id: string;
  trip_id: string;
  description: string;
  /** In minor units of `currency` (cents for EUR). */
  amount: number;
  /** ISO 4217, e.g. `EUR`. */
  currency: string;
  due_date: DateString | null;
  status: PaymentStatus;
  paid_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** decisions.md D5. */
export interface Contact {
  object: 'contact';
  id: string;
  first_name: string;
  last_name: string;
  email: string | null;
  phone: string | null;
  trip_ids: string[];
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RelatedObject<T extends ObjectType = ObjectType> {
  type: T;
  id: string;
  /** Where to read the object, e.g. `/api/v1/trips/trp_…`. */
  url: string;
}

export interface StatusChange {
  from: TripStatus;
  to: TripStatus;
}

type EventData<T extends EventType> = (typeof EVENT_TYPES)[T]['data'] extends 'status_change'
  ? StatusChange
  : Record<string, never>;

/** One event of one type: what happened to which object, never the object (decisions.md D6). */
export interface EventOf<T extends EventType> {
  object: 'event';
  id: string;
  type: T;
  created_at: Timestamp;
  related_object: RelatedObject<(typeof EVENT_TYPES)[T]['object']>;
  data: EventData<T>;
}

/** Any event; narrow on `type` to get its object type and data. */
export type Event = { [T in EventType]: EventOf<T> }[EventType];

/** A page of a list (D4). `next_cursor` is null when there is nothing more to read. */
export interface List<T> {
  object: 'list';
  data: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** A page of `GET /events` (D6): `next_cursor` is never null, it is "where you are now". */
export interface EventList {
  object: 'list';
  data: Event[];
  next_cursor: string;
  has_more: boolean;
}

/** The body of every error response (D1). */
export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    request_id: string;
    /** The query parameter at fault; set with `invalid_request`. */
    param?: string;
  };
}
