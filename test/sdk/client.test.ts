import { TripService, TripServiceError, type Event, type Trip } from '../../packages/sdk/src/index.ts';
import { waitFor } from '@trips/testkit';
import { defaultBaseUrl } from '../../packages/sdk/src/http.ts';
import { insertContact, insertPayment, insertTrip, setTripStatus, startStack, type Stack } from './stack.ts';

// The client (issue 25, items 2 and 3) against the real API and recorder: every call, auto-paging
// over several pages, the typed events and their related objects, and each D1 error code the
// read API answers, as TripServiceError.

let stack: Stack;
let agency: Awaited<ReturnType<Stack['agency']>>;
let client: TripService;
const tripIds: string[] = [];

beforeAll(async () => {
  stack = await startStack();
  agency = await stack.agency();
  client = new TripService({ apiKey: agency.key, baseUrl: stack.apiUrl });
  for (let i = 0; i < 7; i++) tripIds.push(await insertTrip(stack.db, agency.agencyId, `Trip ${i}`));
}, 60_000);
afterAll(() => stack?.stop(), 30_000);

const expectError = async (promise: PromiseLike<unknown>, fields: Partial<TripServiceError>) => {
  const error = await Promise.resolve(promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TripServiceError);
  expect(error).toMatchObject(fields);
  expect((error as TripServiceError).requestId).toMatch(/^req_/);
  return error as TripServiceError;
};

test('retrieve answers the typed object; a missing one is a not_found TripServiceError', async () => {
  const trip: Trip = await client.trips.retrieve(tripIds[0]!);
  expect(trip).toMatchObject({ object: 'trip', id: tripIds[0], title: 'Trip 0', status: 'proposal' });
  const paymentId = await insertPayment(stack.db, agency.agencyId, tripIds[0]!);
  expect(await client.payments.retrieve(paymentId)).toMatchObject({ object: 'payment', amount: 50_000 });
  const contactId = await insertContact(stack.db, agency.agencyId);
  expect(await client.contacts.retrieve(contactId)).toMatchObject({ object: 'contact', first_name: 'Rory' });
  const error = await expectError(client.trips.retrieve('trp_nothere'), { status: 404, code: 'not_found' });
  expect(error.message).toContain('trp_nothere');
});

test('a list awaited is one page; iterated, it reads every page by itself', async () => {
  const page = await client.trips.list({ limit: 2 });
  expect(page.data).toHaveLength(2);
  expect(page.has_more).toBe(true);
  expect(page.next_cursor).toEqual(expect.any(String));
  const second = await client.trips.list({ limit: 2, cursor: page.next_cursor! });
  expect(second.data[0]!.id).not.toBe(page.data[0]!.id);

  const all: string[] = [];
  for await (const trip of client.trips.list({ limit: 2 })) all.push(trip.id);
  expect(all.sort()).toEqual([...tripIds].sort()); // 4 pages of 2
  expect(await client.trips.list({ limit: 3 }).toArray(5)).toHaveLength(5);

  const later = new Date(Date.now() + 60_000);
  expect(await client.trips.list({ updatedSince: later }).toArray()).toEqual([]);
  expect(await client.payments.list().toArray()).toHaveLength(1);
  expect(await client.contacts.list().toArray()).toHaveLength(1);
});

test('events page by themselves, filter by type, and narrow on type; fetchRelatedObject follows them', async () => {
  await setTripStatus(stack.db, tripIds[1]!, 'planning');
  const events = await waitFor(
    async () => {
      const all = await client.events.list({ limit: 3 }).toArray();
      return all.some((e) => e.type === 'trip.status_changed') && all.length >= 10 && all;
    },
    { what: 'the recorder to record the trips, payment, contact and status change' },
  );
  expect(events.filter((e) => e.type === 'trip.created')).toHaveLength(7);
  const changed = events.find((e): e is Event<'trip.status_changed'> => e.type === 'trip.status_changed')!;
  expect(changed.data).toEqual({ from: 'proposal', to: 'planning' });

  const onlyPayments = await client.events.list({ types: ['payment.created'] }).toArray();
  expect(onlyPayments.map((e) => e.type)).toEqual(['payment.created']);

  const trip = await client.events.fetchRelatedObject(changed);
  expect(trip).toMatchObject({ object: 'trip', id: tripIds[1], status: 'planning' });
  await stack.db.deleteFrom('trips').where('id', '=', tripIds[6]!).execute();
  const created = events.find((e) => e.type === 'trip.created' && e.related_object.id === tripIds[6])!;
  expect(await client.events.fetchRelatedObject(created)).toBeNull();
  tripIds.pop();

  // The iterator keeps the last cursor: reading after it gives only what came later.
  const list = client.events.list({ limit: 5 });
  for await (const _ of list);
  const later = await client.events.list({ after: list.cursor }).toArray();
  expect(later.every((e) => !events.some((seen) => seen.id === e.id))).toBe(true);
});

test('every D1 error the read API answers arrives as a TripServiceError with its code', async () => {
  const as = (apiKey: string) => new TripService({ apiKey, baseUrl: stack.apiUrl });
  await expectError(as('tps_not_a_real_key_0000000000000000000000').trips.retrieve(tripIds[0]!), {
    status: 401,
    code: 'unauthorized',
  });
  const noEvents = await stack.agency(['trips:read']);
  const scope = await expectError(as(noEvents.key).events.list(), {
    status: 403,
    code: 'insufficient_scope',
  });
  expect(scope.message).toContain('events:read');
  await expectError(as(noEvents.key).payments.list(), { status: 403, code: 'insufficient_scope' });
  const off = await stack.agency();
  await stack.db.updateTable('agencies').set({ api_enabled: false }).where('id', '=', off.agencyId).execute();
  await expectError(as(off.key).trips.list(), { status: 403, code: 'api_not_enabled' });
  const lapsed = await stack.agency();
  await stack.db
    .updateTable('agencies')
    .set({ subscription_status: 'expired' })
    .where('id', '=', lapsed.agencyId)
    .execute();
  await expectError(as(lapsed.key).trips.list(), { status: 403, code: 'subscription_inactive' });
  await expectError(client.trips.list({ limit: 0 }), {
    status: 400,
    code: 'invalid_request',
    param: 'limit',
  });
  await expectError(client.events.list({ after: 'made-up' }), {
    status: 400,
    code: 'invalid_request',
    param: 'after',
  });
});

test('bad arguments are refused with a clear TypeError before any request', () => {
  expect(() => new TripService({ apiKey: '', baseUrl: stack.apiUrl })).toThrow(/apiKey is required/);
  expect(() => new TripService({ apiKey: 'tps_x', baseUrl: 'localhost:3000' })).toThrow(/baseUrl/);
  expect(() => client.trips.retrieve('')).toThrow(/id must be a non-empty string/);
});

test('without baseUrl the client talks to TRIPS_BASE_URL, as the trips command does, else localhost:3000', async () => {
  const before = process.env.TRIPS_BASE_URL;
  try {
    process.env.TRIPS_BASE_URL = stack.apiUrl;
    const fromEnv = new TripService({ apiKey: agency.key });
    expect(await fromEnv.trips.retrieve(tripIds[0]!)).toMatchObject({ object: 'trip', id: tripIds[0] });
    delete process.env.TRIPS_BASE_URL;
    // Whatever listens on this machine's port 3000 is not asked: the default is read alone.
    expect(defaultBaseUrl()).toBe('http://localhost:3000');
    process.env.TRIPS_BASE_URL = '';
    expect(defaultBaseUrl()).toBe('http://localhost:3000');
  } finally {
    if (before === undefined) delete process.env.TRIPS_BASE_URL;
    else process.env.TRIPS_BASE_URL = before;
  }
});

test('a key with characters no key has is refused, and the error does not hold it', () => {
  for (const apiKey of [
    `${agency.key}\n`,
    `${agency.key}\r\nx: y`,
    `Bearer ${agency.key}`,
    `${agency.key} `,
  ]) {
    let error: Error | undefined;
    try {
      new TripService({ apiKey, baseUrl: stack.apiUrl });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error).toBeInstanceOf(TypeError);
    expect(error!.message).toBe(
      'TripService: the API key is not valid (it holds characters a key never has).',
    );
  }
});
