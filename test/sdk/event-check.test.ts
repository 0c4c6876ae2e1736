import { EVENT_TYPE_NAMES, EVENT_TYPES, isValid, TRIP_STATUSES } from '@trips/contracts';
import fc from 'fast-check';
import { eventProblem } from '../../packages/sdk/src/cli/event-check.ts';

// `trips listen` checks each event by hand against the API's event schema (the SDK ships without
// the contracts package and its ajv). This holds that check to the schema itself: over events of
// every type and every way of spoiling one, the hand-written check and ajv with the contracts'
// schema say the same.

const PATHS = {
  trip: ['trp_', 'trips'],
  payment: ['pay_', 'payments'],
  contact: ['con_', 'contacts'],
} as const;
const tail = fc.stringMatching(/^[0-9A-Za-z_-]{1,24}$/);

const validEvent = fc
  .record({
    type: fc.constantFrom(...EVENT_TYPE_NAMES),
    id: tail,
    objectId: tail,
    at: fc.date({ min: new Date('2000-01-01'), max: new Date('2099-12-31'), noInvalidDate: true }),
    from: fc.constantFrom(...TRIP_STATUSES),
    to: fc.constantFrom(...TRIP_STATUSES),
  })
  .map(({ type, id, objectId, at, from, to }) => {
    const object = EVENT_TYPES[type].object;
    const [prefix, path] = PATHS[object];
    return {
      object: 'event',
      id: `evt_${id}`,
      type,
      created_at: at.toISOString(),
      related_object: {
        type: object,
        id: `${prefix}${objectId}`,
        url: `/api/v1/${path}/${prefix}${objectId}`,
      },
      data: type === 'trip.status_changed' ? { from, to } : {},
    } as Record<string, unknown>;
  });

/** Strings a server gone wrong might send: near misses of valid values, and control characters. */
const oddString = fc.oneof(
  fc.string(),
  fc.constantFrom(...EVENT_TYPE_NAMES, ...TRIP_STATUSES, 'trip', 'payment', 'contact', 'event'),
  fc.constantFrom(
    'evt_a\r\nb',
    'evt_\u001b[2J',
    'trip.created\n',
    'trip.archived',
    'trp_x',
    '/api/v1/trips/trp_',
    '/api/v1/payments/trp_x',
    '2026-02-30T10:00:00.000Z',
    '2026-11-21T10:15:30Z',
    '2026-11-21T25:15:30.000Z',
    'proposal ',
    'evt_',
    '',
  ),
);
const oddValue = fc.oneof(oddString, fc.jsonValue(), fc.constant(undefined));

type Path = readonly string[];
const PATHS_IN_EVENT: Path[] = [
  [],
  ['object'],
  ['id'],
  ['type'],
  ['created_at'],
  ['related_object'],
  ['related_object', 'type'],
  ['related_object', 'id'],
  ['related_object', 'url'],
  ['data'],
  ['data', 'from'],
  ['data', 'to'],
  ['extra'],
  ['related_object', 'extra'],
  ['data', 'extra'],
];

function spoil(event: Record<string, unknown>, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const copy = structuredClone(event);
  let at = copy as Record<string, unknown>;
  for (const key of path.slice(0, -1)) {
    if (typeof at[key] !== 'object' || at[key] === null) return copy;
    at = at[key] as Record<string, unknown>;
  }
  const last = path.at(-1)!;
  if (value === undefined) delete at[last];
  else at[last] = value;
  return copy;
}

test('every valid event of every type passes', () => {
  fc.assert(
    fc.property(validEvent, (event) => {
      expect(isValid('Event', event)).toBe(true);
      expect(eventProblem(event)).toBeUndefined();
    }),
    { numRuns: 500 },
  );
});

test('for events spoiled in every place, the check and the schema agree', () => {
  fc.assert(
    fc.property(validEvent, fc.constantFrom(...PATHS_IN_EVENT), oddValue, (event, path, value) => {
      const spoiled = spoil(event, path, value);
      expect({ spoiled, passes: eventProblem(spoiled) === undefined }).toEqual({
        spoiled,
        passes: isValid('Event', spoiled),
      });
    }),
    { numRuns: 3_000 },
  );
});

test('the reason names what is wrong, escaped', () => {
  expect(eventProblem({ hello: 1 })).toMatch(/not an event/);
  expect(eventProblem(null)).toMatch(/not an event/);
  expect(eventProblem([])).toMatch(/not an event/);
  const [event] = fc.sample(validEvent, { numRuns: 1, seed: 1 });
  expect(eventProblem({ ...event, id: 'evt_a\r\nb' })).toBe("id 'evt_a\\r\\nb' is not an event id (evt_…)");
  expect(eventProblem({ ...event, type: 'x\u001b[2J' })).toBe("type 'x\\x1b[2J' is not an event type");
});
