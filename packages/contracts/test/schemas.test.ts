import { ContractViolation, assertValid, isValid, validate, type SchemaName } from '../src/index.ts';
import * as examples from './examples.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const VALID: [SchemaName, unknown][] = [
  ['Trip', examples.trip],
  ['Trip', examples.flexibleTrip],
  ['Payment', examples.payment],
  ['Payment', examples.paidPayment],
  ['Contact', examples.contact],
  ['Event', examples.statusChanged],
  ['Event', examples.tripUpdated],
  ['Event', examples.paymentPaid],
  ['TripList', examples.tripList],
  ['TripList', examples.lastTripPage],
  ['PaymentList', examples.paymentList],
  ['ContactList', examples.contactList],
  ['EventList', examples.eventList],
  ['EventList', examples.emptyEventList],
  ['Error', examples.notFound],
  ['Error', examples.invalidRequest],
];

/** A deep copy of `value` with `change` applied, so each case starts from a valid example. */
function changed<T>(value: T, change: (copy: any) => void): unknown {
  const copy = structuredClone(value);
  change(copy);
  return copy;
}

/** Every path in `value` that leads to an object, e.g. [], ['dates'], ['data', 0, 'travelers']. */
function objectPaths(value: Json, path: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const children = Array.isArray(value)
    ? value.flatMap((item, index) => objectPaths(item, [...path, index]))
    : Object.entries(value).flatMap(([key, item]) => objectPaths(item, [...path, key]));
  return Array.isArray(value) ? children : [path, ...children];
}

function at(value: any, path: (string | number)[]): any {
  return path.reduce((node, key) => node[key], value);
}

test.each(VALID)('%s accepts a realistic example', (schema, value) => {
  expect(validate(schema, value)).toEqual([]);
  expect(() => assertValid(schema, value)).not.toThrow();
});

/** The only fields the contract lets a body leave out. */
const OPTIONAL = new Set(['error.param']);

test.each(VALID)('%s rejects the example with any one field missing', (schema, value) => {
  for (const path of objectPaths(value as Json)) {
    for (const key of Object.keys(at(value, path))) {
      const field = [...path, key].join('.');
      const broken = changed(value, (copy) => delete at(copy, path)[key]);
      expect([schema, field, isValid(schema, broken)]).toEqual([schema, field, OPTIONAL.has(field)]);
    }
  }
});

test.each(VALID)('%s rejects an extra field anywhere', (schema, value) => {
  for (const path of objectPaths(value as Json)) {
    const broken = changed(value, (copy) => (at(copy, path).surprise = 1));
    expect([schema, path.join('.'), isValid(schema, broken)]).toEqual([schema, path.join('.'), false]);
  }
});

test.each([
  '2026-11-21T10:15:30Z',
  '2026-11-21T10:15:30.12Z',
  '2026-11-21T10:15:30.1234Z',
  '2026-11-21T10:15:30.123+00:00',
  '2026-11-21T11:15:30.123+01:00',
  '2026-11-21 10:15:30.123Z',
  '2026-13-21T10:15:30.123Z',
  '2026-02-30T10:15:30.123Z',
  '2026-11-21T25:15:30.123Z',
  'yesterday',
  '',
])('a timestamp must be UTC with milliseconds, not %j', (text) => {
  expect(isValid('Trip', { ...examples.trip, updated_at: text })).toBe(false);
  expect(isValid('Trip', { ...examples.trip, accepted_at: text })).toBe(false);
  expect(isValid('Event', { ...examples.tripUpdated, created_at: text })).toBe(false);
  expect(isValid('Payment', { ...examples.paidPayment, paid_at: text })).toBe(false);
});

test.each(['2026-11-5', '21.11.2026', '2026-11-31', '2026-11-21T00:00:00.000Z'])(
  'a date must be YYYY-MM-DD, not %j',
  (text) => {
    expect(
      isValid(
        'Trip',
        changed(examples.trip, (t) => (t.dates.start_date = text)),
      ),
    ).toBe(false);
    expect(isValid('Payment', { ...examples.payment, due_date: text })).toBe(false);
  },
);

test('enums reject values outside the contract', () => {
  expect(isValid('Trip', { ...examples.trip, status: 'draft' })).toBe(false);
  expect(
    isValid(
      'Trip',
      changed(examples.trip, (t) => (t.dates.mode = 'open')),
    ),
  ).toBe(false);
  expect(isValid('Payment', { ...examples.payment, status: 'draft' })).toBe(false);
  expect(isValid('Event', { ...examples.tripUpdated, type: 'trip.exploded' })).toBe(false);
  expect(
    isValid(
      'Error',
      changed(examples.notFound, (e) => (e.error.code = 'teapot')),
    ),
  ).toBe(false);
  expect(
    isValid(
      'Event',
      changed(examples.statusChanged, (e) => (e.data.to = 'archived')),
    ),
  ).toBe(false);
});

test('ids carry the prefix of their type', () => {
  expect(isValid('Trip', { ...examples.trip, id: 'pay_4kXq9ZtR2mB7nW1c' })).toBe(false);
  expect(isValid('Trip', { ...examples.trip, id: 'trp_' })).toBe(false);
  expect(isValid('Payment', { ...examples.payment, trip_id: 'con_1' })).toBe(false);
  expect(isValid('Contact', { ...examples.contact, trip_ids: ['trp_1', 'trp_1'] })).toBe(false);
  expect(isValid('Event', { ...examples.tripUpdated, id: 'trp_1' })).toBe(false);
  expect(
    isValid(
      'Error',
      changed(examples.notFound, (e) => (e.error.request_id = 'abc')),
    ),
  ).toBe(false);
});

test('a trip is consistent: dates follow the mode, the page url follows publication', () => {
  const dates = (change: object) => changed(examples.trip, (t) => Object.assign(t.dates, change));
  expect(isValid('Trip', dates({ mode: 'flexible' }))).toBe(false);
  expect(isValid('Trip', dates({ mode: 'flexible', start_date: null }))).toBe(false);
  expect(isValid('Trip', dates({ mode: 'flexible', start_date: null, end_date: null }))).toBe(true);
  expect(isValid('Trip', dates({ start_date: null, end_date: null }))).toBe(false);
  expect(isValid('Trip', dates({ end_date: null }))).toBe(true);
  expect(isValid('Trip', dates({ num_days: 0 }))).toBe(false);
  expect(isValid('Trip', dates({ num_days: 2.5 }))).toBe(false);
  const page = (client_page: object) => ({ ...examples.trip, client_page });
  expect(isValid('Trip', page({ published: true, url: null }))).toBe(false);
  expect(isValid('Trip', page({ published: false, url: 'https://trips.example.com/p/x' }))).toBe(false);
  expect(isValid('Trip', page({ published: true, url: 'http://trips.example.com/p/x' }))).toBe(false);
});

test('a payment has paid_at exactly when paid, and an amount in whole minor units', () => {
  expect(isValid('Payment', { ...examples.payment, paid_at: '2026-10-10T14:22:01.500Z' })).toBe(false);
  expect(isValid('Payment', { ...examples.paidPayment, paid_at: null })).toBe(false);
  expect(isValid('Payment', { ...examples.payment, amount: 12.5 })).toBe(false);
  expect(isValid('Payment', { ...examples.payment, amount: 0 })).toBe(false);
  expect(isValid('Payment', { ...examples.payment, currency: 'eur' })).toBe(false);
});

test('an event carries no object data, and status changes carry exactly from and to', () => {
  expect(isValid('Event', { ...examples.tripUpdated, data: examples.trip })).toBe(false);
  expect(isValid('Event', { ...examples.tripUpdated, data: { title: 'New title' } })).toBe(false);
  expect(isValid('Event', { ...examples.tripUpdated, data: null })).toBe(false);
  expect(isValid('Event', { ...examples.statusChanged, data: {} })).toBe(false);
  expect(
    isValid('Event', { ...examples.statusChanged, data: { from: 'planning', to: 'confirmed', title: 'x' } }),
  ).toBe(false);
  expect(isValid('Event', { ...examples.statusChanged, type: 'trip.accepted', data: {} })).toBe(true);
});

test("an event's related object matches the event type, its id and its url", () => {
  const related = (related_object: object) => ({ ...examples.paymentPaid, related_object });
  const { id } = examples.payment;
  expect(isValid('Event', related({ type: 'payment', id, url: `/api/v1/payments/${id}` }))).toBe(true);
  expect(isValid('Event', related({ type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' }))).toBe(false);
  expect(isValid('Event', related({ type: 'payment', id: 'trp_1', url: '/api/v1/payments/trp_1' }))).toBe(
    false,
  );
  expect(isValid('Event', related({ type: 'payment', id, url: `/api/v1/trips/${id}` }))).toBe(false);
  expect(
    isValid('Event', related({ type: 'payment', id, url: `https://api.example.com/api/v1/payments/${id}` })),
  ).toBe(false);
  expect(isValid('Event', related({ type: 'webhook', id: 'whk_1', url: '/api/v1/webhooks/whk_1' }))).toBe(
    false,
  );
});

test('lists: a cursor whenever there is more, non_golfers null in trip lists, never a null events cursor', () => {
  expect(isValid('TripList', { ...examples.tripList, next_cursor: null })).toBe(false);
  expect(isValid('TripList', { ...examples.lastTripPage, next_cursor: 'c_1' })).toBe(true);
  expect(isValid('TripList', { ...examples.lastTripPage, data: [examples.trip] })).toBe(false);
  expect(isValid('TripList', { ...examples.lastTripPage, data: [examples.payment] })).toBe(false);
  expect(isValid('TripList', { ...examples.lastTripPage, object: 'trip' })).toBe(false);
  expect(isValid('EventList', { ...examples.emptyEventList, next_cursor: null })).toBe(false);
  expect(isValid('EventList', { ...examples.emptyEventList, next_cursor: '' })).toBe(false);
  expect(isValid('EventList', { ...examples.eventList, data: [examples.trip] })).toBe(false);
});

test('an error body may name the param at fault, and nothing else', () => {
  // A 400 about something other than a query parameter (an undecodable path) has no param.
  expect(
    isValid(
      'Error',
      changed(examples.invalidRequest, (e) => delete e.error.param),
    ),
  ).toBe(true);
  expect(
    isValid(
      'Error',
      changed(examples.invalidRequest, (e) => (e.error.param = '')),
    ),
  ).toBe(false);
  expect(
    isValid(
      'Error',
      changed(examples.notFound, (e) => (e.error.message = '')),
    ),
  ).toBe(false);
  expect(isValid('Error', examples.notFound.error)).toBe(false);
});

test('assertValid throws a ContractViolation that lists every problem by path', () => {
  const broken = changed(examples.trip, (t) => {
    t.status = 'draft';
    t.dates.start_date = '21.11.2026';
    t.extra = true;
    delete t.updated_at;
  });
  let thrown: unknown;
  try {
    assertValid('Trip', broken);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ContractViolation);
  const message = (thrown as Error).message;
  expect(message).toMatch(/^value does not match Trip:/);
  expect(message).toContain('/status must be one of "proposal"');
  expect(message).toContain('/dates/start_date must match format "date"');
  expect(message).toContain("(root) has unexpected property 'extra'");
  expect(message).toContain("(root) must have required property 'updated_at'");
  expect((thrown as ContractViolation).errors.length).toBeGreaterThanOrEqual(4);
});

test('an unknown schema name is a programming error, not a validation failure', () => {
  expect(() => validate('Trips' as SchemaName, {})).toThrow(/unknown schema 'Trips'/);
});
