import { ERROR_CODE_NAMES } from './errors.ts';
import { EVENT_TYPES, EVENT_TYPE_NAMES, eventTypesOf } from './events.ts';
import { ID_PREFIXES, idPattern } from './ids.ts';
import { API_BASE_PATH, OBJECTS, OBJECT_TYPES, PAYMENT_STATUSES, TRIP_STATUSES } from './objects.ts';

// The JSON Schemas (draft 2020-12) of every public body. They are written once, here, in the
// form OpenAPI 3.1 wants them: refs point at `#/components/schemas/<Name>`, so openapi.ts puts this
// very object into the document and validate.ts compiles it, and the two cannot disagree.
// `additionalProperties: false` everywhere: a field we did not promise is a bug, not a bonus.

export type JsonSchema = { [keyword: string]: unknown };

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

// A pattern for the exact form we emit (UTC, milliseconds); `format` adds calendar validity, so
// 2026-13-40T… fails although it matches the pattern.
const TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';
const DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

function timestamp(description: string, nullable = false): JsonSchema {
  return {
    type: nullable ? ['string', 'null'] : 'string',
    format: 'date-time',
    pattern: TIMESTAMP_PATTERN,
    description: `${description} ISO 8601, UTC, with milliseconds.`,
    examples: ['2026-11-21T10:15:30.123Z'],
  };
}

function date(description: string): JsonSchema {
  return {
    type: ['string', 'null'],
    format: 'date',
    pattern: DATE_PATTERN,
    description: `${description} Format YYYY-MM-DD.`,
  };
}

function id(kind: keyof typeof ID_PREFIXES, description: string): JsonSchema {
  return {
    type: 'string',
    pattern: idPattern(kind),
    description,
    examples: [`${ID_PREFIXES[kind]}4kXq9ZtR2mB7nW1c`],
  };
}

/** The `object` field every body starts with, naming its kind as Stripe's do. */
function kind(name: string): JsonSchema {
  return { const: name, description: `Always \`${name}\`.` };
}

function object(
  description: string,
  properties: Record<string, JsonSchema>,
  extra: JsonSchema = {},
): JsonSchema {
  return {
    type: 'object',
    description,
    required: Object.keys(properties),
    properties,
    additionalProperties: false,
    ...extra,
  };
}

/** `{"object": "list", …}` of D4; `item` may narrow the item schema for lists. */
function list(description: string, item: JsonSchema): JsonSchema {
  return object(
    description,
    {
      object: kind('list'),
      data: { type: 'array', items: item, description: 'The objects of this page, in list order.' },
      next_cursor: {
        type: ['string', 'null'],
        minLength: 1,
        description: 'Pass as `cursor` to read the next page; null when there is nothing more.',
      },
      has_more: { type: 'boolean', description: 'True when another page follows.' },
    },
    // A client told "there is more" must also be told where to continue.
    {
      if: { properties: { has_more: { const: true } } },
      then: { properties: { next_cursor: { type: 'string' } } },
    },
  );
}

/** `related_object.id` and `.url` must name an object of `related_object.type`. */
const relatedObjectRules = OBJECT_TYPES.map((type) => ({
  if: { properties: { type: { const: type } } },
  then: {
    properties: {
      id: { pattern: idPattern(type) },
      url: { pattern: `^${API_BASE_PATH}/${OBJECTS[type].collection}/${idPattern(type).slice(1)}` },
    },
  },
}));

/** An event's `related_object.type` follows from its type (the catalogue's `object` column). */
const eventObjectRules = OBJECT_TYPES.map((type) => ({
  if: { properties: { type: { enum: eventTypesOf(type) } } },
  then: { properties: { related_object: { type: 'object', properties: { type: { const: type } } } } },
}));

const statusChangeTypes = EVENT_TYPE_NAMES.filter((type) => EVENT_TYPES[type].data === 'status_change');

export const SCHEMAS = {
  TripStatus: { enum: [...TRIP_STATUSES], description: 'Status of a trip.' },
  EventType: { enum: [...EVENT_TYPE_NAMES], description: 'Type of an event (the event catalogue).' },

  Trip: object('A trip an agency plans for its clients.', {
    object: kind('trip'),
    id: id('trip', 'Unique id of the trip.'),
    title: { type: 'string', minLength: 1, description: 'The trip name the client sees.' },
    status: { ...ref('TripStatus'), description: 'Where the trip is in its life.' },
    destination: object('Where the trip goes.', {
      region: { type: ['string', 'null'], description: 'The region the client sees.' },
      base_camp: { type: ['string', 'null'], description: 'The town the group stays in.' },
    }),
    dates: object(
      'When the trip takes place.',
      {
        mode: {
          enum: ['fixed', 'flexible'],
          description:
            '`fixed` when a start date is recorded; `flexible` when the trip has a length but no calendar yet.',
        },
        start_date: date('First day. Null when dates are flexible.'),
        end_date: date('Last day, inclusive. Null when no end date is recorded.'),
        num_days: { type: 'integer', minimum: 1, description: 'Length in days. Always set.' },
      },
      {
        if: { properties: { mode: { const: 'flexible' } } },
        then: { properties: { start_date: { type: 'null' }, end_date: { type: 'null' } } },
        else: { properties: { start_date: { type: 'string' } } },
      },
    ),
    travelers: object('Who travels.', {
      golfers: { type: 'integer', minimum: 0, description: 'Travellers who play.' },
      non_golfers: {
        type: ['integer', 'null'],
        minimum: 0,
        description:
          'Travellers who do not play. Always null in lists; when retrieving one trip, a number when the trip has an itinerary, otherwise null.',
      },
    }),
    client_page: object(
      'The page the client sees.',
      {
        published: { type: 'boolean', description: 'True when the client page is live.' },
        url: {
          type: ['string', 'null'],
          format: 'uri',
          pattern: '^https://',
          description: 'Address of the client page when it is live, otherwise null.',
        },
      },
      {
        if: { properties: { published: { const: true } } },
        then: { properties: { url: { type: 'string' } } },
        else: { properties: { url: { type: 'null' } } },
      },
    ),
    accepted_at: timestamp('When the client accepted the proposal, or null.', true),
    created_at: timestamp('Creation time.'),
    updated_at: timestamp('Time of the last change; `updated_since` of the list compares with it.'),
  }),

  Payment: object(
    'A payment shown to a client. Drafts and cancelled payments are never visible.',
    {
      object: kind('payment'),
      id: id('payment', 'Unique id of the payment.'),
      trip_id: id('trip', 'The trip the payment belongs to.'),
      description: { type: 'string', minLength: 1, description: 'What the client pays for.' },
      amount: {
        type: 'integer',
        minimum: 1,
        description: 'Amount in minor units of the currency (cents for EUR).',
      },
      currency: {
        type: 'string',
        pattern: '^[A-Z]{3}$',
        description: 'ISO 4217 currency code.',
        examples: ['EUR'],
      },
      due_date: date('When the payment is due, or null.'),
      status: { enum: [...PAYMENT_STATUSES], description: '`paid` once paid in full, otherwise `open`.' },
      paid_at: timestamp('When the payment was paid in full, or null while open.', true),
      created_at: timestamp('Creation time.'),
      updated_at: timestamp('Time of the last change.'),
    },
    {
      if: { properties: { status: { const: 'paid' } } },
      then: { properties: { paid_at: { type: 'string' } } },
      else: { properties: { paid_at: { type: 'null' } } },
    },
  ),

  Contact: object('A person an agency plans trips for.', {
    object: kind('contact'),
    id: id('contact', 'Unique id of the contact.'),
    first_name: { type: 'string', minLength: 1, description: 'First name.' },
    last_name: { type: 'string', minLength: 1, description: 'Last name.' },
    // As loose as the database's own check: a stricter schema would reject data we hold.
    email: {
      type: ['string', 'null'],
      pattern: '^[^@\\s]+@[^@\\s]+$',
      description: 'E-mail address, or null.',
    },
    phone: { type: ['string', 'null'], description: 'Phone number as entered, or null.' },
    trip_ids: {
      type: 'array',
      items: id('trip', 'A trip the contact takes part in.'),
      uniqueItems: true,
      description: 'The trips the contact takes part in.',
    },
    created_at: timestamp('Creation time.'),
    updated_at: timestamp('Time of the last change.'),
  }),

  RelatedObject: object(
    'The object an event concerns. Read it through the API at `url`: an event never carries it.',
    {
      type: { enum: [...OBJECT_TYPES], description: 'The object type.' },
      id: { type: 'string', description: 'The object id.' },
      url: {
        type: 'string',
        description: 'Path of the object in this API.',
        examples: ['/api/v1/trips/trp_4kXq9ZtR2mB7nW1c'],
      },
    },
    { allOf: relatedObjectRules },
  ),

  StatusChange: object('The data of `trip.status_changed`.', {
    from: { ...ref('TripStatus'), description: 'The status before the change.' },
    to: { ...ref('TripStatus'), description: 'The status after the change.' },
  }),

  Event: object(
    'Something that happened to an object. The webhook body and the item of `GET /events`.',
    {
      object: kind('event'),
      id: id('event', 'Unique id of the event; receivers deduplicate by it.'),
      type: { ...ref('EventType'), description: 'What happened; see the event types.' },
      created_at: timestamp('When the event was recorded.'),
      related_object: { ...ref('RelatedObject'), description: 'The object the event concerns.' },
      data: {
        type: 'object',
        description: '`{from, to}` for `trip.status_changed`; `{}` for every other type.',
      },
    },
    {
      allOf: [
        ...eventObjectRules,
        {
          if: { properties: { type: { enum: statusChangeTypes } } },
          then: { properties: { data: ref('StatusChange') } },
          else: { properties: { data: { type: 'object', additionalProperties: false } } },
        },
      ],
    },
  ),

  TripList: list('A page of trips, ordered by `(updated_at, id)`.', {
    allOf: [
      ref('Trip'),
      { properties: { travelers: { type: 'object', properties: { non_golfers: { type: 'null' } } } } },
    ],
  }),
  PaymentList: list('A page of payments, ordered by `(updated_at, id)`.', ref('Payment')),
  ContactList: list('A page of contacts, ordered by `(updated_at, id)`.', ref('Contact')),

  EventList: object('A page of events, oldest first.', {
    object: kind('list'),
    data: { type: 'array', items: ref('Event'), description: 'The events of this page, oldest first.' },
    next_cursor: {
      type: 'string',
      minLength: 1,
      description: 'Never null: store it and pass it as `after` next time, even when this page is empty.',
    },
    has_more: { type: 'boolean', description: 'True when more events can be read right away.' },
  }),

  Error: object('The body of every error response.', {
    error: object(
      'What went wrong.',
      {
        code: { enum: [...ERROR_CODE_NAMES], description: 'Stable, machine-readable error code.' },
        message: { type: 'string', minLength: 1, description: 'Human-readable explanation; may change.' },
        request_id: id('request', 'Equal to the `Request-Id` response header; quote it to support.'),
        param: {
          type: 'string',
          minLength: 1,
          description: 'With `invalid_request`: the query parameter at fault, when one is.',
        },
      },
      {
        // `param` names the query parameter at fault; a 400 about something else has none.
        required: ['code', 'message', 'request_id'],
      },
    ),
  }),
} satisfies Record<string, JsonSchema>;
