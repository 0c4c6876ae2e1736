import {
  ERROR_CODES,
  EVENT_TYPES,
  EVENT_TYPE_NAMES,
  ID_PREFIXES,
  OBJECTS,
  SCOPES,
  TRIP_STATUSES,
  eventTypesOf,
  isEventType,
  objectUrl,
  scopeForEventType,
} from '../src/index.ts';

// The tables are the contract; these tests restate interface.md and decisions.md literally, so a
// change to a table has to be a deliberate change to the contract.

test('the event catalogue holds the 14 types of interface.md 6, each on its own object', () => {
  expect(EVENT_TYPE_NAMES).toEqual([
    'trip.created',
    'trip.status_changed',
    'trip.accepted',
    'trip.published',
    'trip.unpublished',
    'trip.updated',
    'trip.deleted',
    'payment.created',
    'payment.paid',
    'payment.updated',
    'payment.deleted',
    'contact.created',
    'contact.updated',
    'contact.deleted',
  ]);
  for (const type of EVENT_TYPE_NAMES) expect(type.split('.')[0]).toBe(EVENT_TYPES[type].object);
});

test('only the three *.updated types are grouped, and only status changes carry data', () => {
  expect(EVENT_TYPE_NAMES.filter((type) => EVENT_TYPES[type].grouped)).toEqual([
    'trip.updated',
    'payment.updated',
    'contact.updated',
  ]);
  expect(EVENT_TYPE_NAMES.filter((type) => EVENT_TYPES[type].data !== 'none')).toEqual([
    'trip.status_changed',
  ]);
});

test('a key needs the scope of the event object (D2)', () => {
  expect(SCOPES).toEqual(['trips:read', 'payments:read', 'contacts:read', 'events:read']);
  expect(scopeForEventType('trip.deleted')).toBe('trips:read');
  expect(scopeForEventType('payment.paid')).toBe('payments:read');
  expect(scopeForEventType('contact.updated')).toBe('contacts:read');
  expect(eventTypesOf('contact')).toEqual(['contact.created', 'contact.updated', 'contact.deleted']);
  expect(isEventType('trip.updated')).toBe(true);
  expect(isEventType('trip.exploded')).toBe(false);
  expect(isEventType('toString')).toBe(false);
});

test('objects, prefixes and statuses follow the spec', () => {
  expect(ID_PREFIXES).toMatchObject({ trip: 'trp_', payment: 'pay_', contact: 'con_', event: 'evt_' });
  expect(Object.keys(OBJECTS)).toEqual(['trip', 'payment', 'contact']);
  expect(objectUrl('payment', 'pay_1')).toBe('/api/v1/payments/pay_1');
  expect(TRIP_STATUSES).toEqual([
    'proposal',
    'planning',
    'confirmed',
    'active',
    'completed',
    'declined',
    'cancelled',
  ]);
});

test('every error code answers with the status of interface.md 7 and D1', () => {
  const statuses = Object.fromEntries(
    Object.entries(ERROR_CODES).map(([code, { status }]) => [code, status]),
  );
  expect(statuses).toEqual({
    unauthorized: 401,
    api_not_enabled: 403,
    subscription_inactive: 403,
    insufficient_scope: 403,
    not_found: 404,
    rate_limited: 429,
    internal_error: 500,
    service_unavailable: 503,
    invalid_request: 400,
    method_not_allowed: 405,
    cursor_expired: 410,
  });
});
