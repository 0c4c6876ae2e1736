// The event schema of the API's document (components.schemas.Event in openapi.json), checked by
// hand: the contracts package that holds the schema is private to the service's repository and
// validates with ajv, and the SDK reaches npm with no dependencies. The tables are typed against
// the generated openapi-types.ts, so an event type, object type or trip status added to the
// document fails to compile here until it is added; test/sdk/event-check.test.ts holds this
// check to the schema itself.
import type { Event, EventObjectTypes, EventType, RelatedObject, TripStatus } from '../openapi-types.ts';
import { shown } from './output.ts';

/**
 * The largest event `trips listen` forwards, as its JSON body. The service's events are a few
 * hundred bytes (ids, a type, a time, at most two statuses); a body this large is not one of them.
 */
const MAX_EVENT_BYTES = 64 * 1024;

const OBJECT_OF: { [T in EventType]: EventObjectTypes[T] } = {
  'trip.created': 'trip',
  'trip.status_changed': 'trip',
  'trip.accepted': 'trip',
  'trip.published': 'trip',
  'trip.unpublished': 'trip',
  'trip.updated': 'trip',
  'trip.deleted': 'trip',
  'payment.created': 'payment',
  'payment.paid': 'payment',
  'payment.updated': 'payment',
  'payment.deleted': 'payment',
  'contact.created': 'contact',
  'contact.updated': 'contact',
  'contact.deleted': 'contact',
};

/** Each kind of related object: its id's prefix and the path of its URL. */
const OBJECTS: Record<RelatedObject['type'], { prefix: string; path: string }> = {
  trip: { prefix: 'trp_', path: '/api/v1/trips/' },
  payment: { prefix: 'pay_', path: '/api/v1/payments/' },
  contact: { prefix: 'con_', path: '/api/v1/contacts/' },
};

const TRIP_STATUSES: Record<TripStatus, true> = {
  proposal: true,
  planning: true,
  confirmed: true,
  active: true,
  completed: true,
  declined: true,
  cancelled: true,
};

/** What follows an id's prefix (the document's id pattern). */
const ID_TAIL = /^[0-9A-Za-z_-]+$/;
const CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A date and time that exists (not the 30th of February), as the document's `date-time` format. */
const isRealTime = (text: string) => {
  const time = new Date(text);
  return !Number.isNaN(time.getTime()) && time.toISOString() === text;
};
const has = (table: object, key: unknown): boolean =>
  typeof key === 'string' && Object.prototype.hasOwnProperty.call(table, key);
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
/** A value as it may be quoted in a message: escaped and short. */
const quoted = (value: unknown) => (typeof value === 'string' ? `'${shown(value, 60)}'` : typeof value);

/** The first key of `value` that is not one of `allowed`, quoted, if there is one. */
function extraKey(value: Record<string, unknown>, allowed: readonly string[]): string | undefined {
  const extra = Object.keys(value).find((key) => !allowed.includes(key));
  return extra === undefined ? undefined : `'${shown(extra, 60)}'`;
}

const isId = (value: unknown, prefix: string): boolean =>
  typeof value === 'string' && value.startsWith(prefix) && ID_TAIL.test(value.slice(prefix.length));

function relatedObjectProblem(related: unknown, type: EventType): string | undefined {
  if (!isRecord(related)) return 'related_object is not an object';
  const wanted = OBJECT_OF[type];
  if (related.type !== wanted)
    return `related_object.type is ${quoted(related.type)}, and a ${type} event concerns a ${wanted}`;
  const { prefix, path } = OBJECTS[wanted];
  if (!isId(related.id, prefix)) return `related_object.id ${quoted(related.id)} is not a ${prefix} id`;
  const url = related.url;
  if (typeof url !== 'string' || !url.startsWith(path) || !isId(url.slice(path.length), prefix))
    return `related_object.url ${quoted(url)} is not a ${path}${prefix}… path`;
  const extra = extraKey(related, ['type', 'id', 'url']);
  return extra && `related_object has a field the schema does not: ${extra}`;
}

function dataProblem(data: unknown, type: EventType): string | undefined {
  if (!isRecord(data)) return 'data is not an object';
  if (type !== 'trip.status_changed') {
    const extra = extraKey(data, []);
    return extra && `data of ${type} holds ${extra}, and it has no fields`;
  }
  for (const side of ['from', 'to'] as const)
    if (!has(TRIP_STATUSES, data[side])) return `data.${side} ${quoted(data[side])} is not a trip status`;
  const extra = extraKey(data, ['from', 'to']);
  return extra && `data has a field the schema does not: ${extra}`;
}

/**
 * Why `value` is not an event as the API's document describes one, or undefined when it is one.
 * The reason quotes what was wrong, escaped for a terminal.
 */
export function eventProblem(value: unknown): string | undefined {
  if (!isRecord(value) || value.object !== 'event') return 'not an event (its object is not "event")';
  if (!isId(value.id, 'evt_')) return `id ${quoted(value.id)} is not an event id (evt_…)`;
  if (!has(OBJECT_OF, value.type)) return `type ${quoted(value.type)} is not an event type`;
  const type = value.type as EventType;
  const created = value.created_at;
  if (typeof created !== 'string' || !CREATED_AT.test(created) || !isRealTime(created))
    return `created_at ${quoted(created)} is not a time such as 2026-11-21T10:15:30.123Z`;
  const problem = relatedObjectProblem(value.related_object, type) ?? dataProblem(value.data, type);
  if (problem) return problem;
  const extra = extraKey(value, ['object', 'id', 'type', 'created_at', 'related_object', 'data']);
  return extra && `the event has a field the schema does not: ${extra}`;
}

/** Why `event` (a valid one) is not forwarded: a body over MAX_EVENT_BYTES. */
export function sizeProblem(event: Event): string | undefined {
  const bytes = Buffer.byteLength(JSON.stringify(event));
  if (bytes <= MAX_EVENT_BYTES) return undefined;
  const size =
    bytes >= 1_048_576 ? `${(bytes / 1_048_576).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
  return `${size}, over the ${MAX_EVENT_BYTES / 1024} KiB an event forwarded may be`;
}
