import { assertValid } from '@trips/contracts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, client, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;
let get: ReturnType<typeof client>;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
  get = client(api.url, own.key);
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

test('a trip is returned with every field of spec 2.1', async () => {
  const trip = await insertTrip(t.db, own.agencyId, {
    title: 'St Andrews links week',
    status: 'confirmed',
    region: 'Fife, Scotland',
    base_camp: 'St Andrews',
    start_date: '2027-05-10',
    end_date: '2027-05-16',
    num_days: 7,
    golfers: 8,
    client_page_published: true,
    client_page_url: 'https://trips.example/p/standrews',
    accepted_at: '2026-11-01T09:30:00.123Z',
  });
  await t.db.insertInto('itineraries').values({ trip_id: trip.id, non_golfers: 3 }).execute();

  const res = await get(`/api/v1/trips/${trip.id}`);
  expect(res.status).toBe(200);
  assertValid('Trip', res.body);
  expect(res.body).toEqual({
    object: 'trip',
    id: trip.id,
    title: 'St Andrews links week',
    status: 'confirmed',
    destination: { region: 'Fife, Scotland', base_camp: 'St Andrews' },
    dates: { mode: 'fixed', start_date: '2027-05-10', end_date: '2027-05-16', num_days: 7 },
    travelers: { golfers: 8, non_golfers: 3 },
    client_page: { published: true, url: 'https://trips.example/p/standrews' },
    accepted_at: '2026-11-01T09:30:00.123Z',
    created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
  });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('request-id')).toMatch(/^req_/);
});

test("JSON answers carry D1's Content-Type to the letter and their length in bytes, and HEAD the same headers", async () => {
  // Non-ASCII text, so that a length in characters would not be the length in bytes.
  const title = 'Año nuevo en Cádiz ⛳';
  const trip = await insertTrip(t.db, own.agencyId, { title });
  const path = `/api/v1/trips/${trip.id}`;

  const res = await get(path);
  const bytes = Buffer.byteLength(res.text);
  expect(res.headers.get('content-type')).toBe('application/json');
  expect(res.headers.get('content-length')).toBe(String(bytes));
  expect(bytes).toBeGreaterThan(res.text.length);
  expect(res.body.title).toBe(title);

  const head = await get(path, { method: 'HEAD' });
  expect(head.status).toBe(200);
  expect(head.headers.get('content-type')).toBe('application/json');
  expect(head.headers.get('content-length')).toBe(String(bytes));
  expect(head.text).toBe('');

  const missing = await get('/api/v1/trips/trp_doesnotexist0000');
  expect(missing.status).toBe(404);
  expect(missing.headers.get('content-type')).toBe('application/json');
});

test('flexible dates: no start date means mode flexible, dates null, num_days still set', async () => {
  const trip = await insertTrip(t.db, own.agencyId, { num_days: 5 });
  const res = await get(`/api/v1/trips/${trip.id}`);
  assertValid('Trip', res.body);
  expect(res.body.dates).toEqual({ mode: 'flexible', start_date: null, end_date: null, num_days: 5 });
  expect(res.body.client_page).toEqual({ published: false, url: null });
  expect(res.body.accepted_at).toBeNull();
});

test('a start date without an end date is still fixed', async () => {
  const trip = await insertTrip(t.db, own.agencyId, { start_date: '2027-03-01', num_days: 4 });
  const res = await get(`/api/v1/trips/${trip.id}`);
  expect(res.body.dates).toEqual({ mode: 'fixed', start_date: '2027-03-01', end_date: null, num_days: 4 });
});

test('non_golfers is a number only when the trip has an itinerary (even zero), otherwise null', async () => {
  const without = await insertTrip(t.db, own.agencyId);
  const withZero = await insertTrip(t.db, own.agencyId);
  await t.db.insertInto('itineraries').values({ trip_id: withZero.id, non_golfers: 0 }).execute();
  expect((await get(`/api/v1/trips/${without.id}`)).body.travelers.non_golfers).toBeNull();
  expect((await get(`/api/v1/trips/${withZero.id}`)).body.travelers.non_golfers).toBe(0);
});

test('a template is not a trip: 404 like a missing one', async () => {
  const template = await insertTrip(t.db, own.agencyId, { is_template: true });
  const res = await get(`/api/v1/trips/${template.id}`);
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('not_found');
  const list = await get('/api/v1/trips?limit=200');
  expect(list.body.data.map((trip: { id: string }) => trip.id)).not.toContain(template.id);
});

test('a missing trip is 404 not_found with the D1 body', async () => {
  const res = await get('/api/v1/trips/trp_doesnotexist');
  expect(res.status).toBe(404);
  assertValid('Error', res.body);
  expect(res.body).toEqual({
    error: {
      code: 'not_found',
      message: "No trip 'trp_doesnotexist' in this agency.",
      request_id: res.headers.get('request-id'),
    },
  });
});

test('GET /trips?query is refused: retrieval takes no query parameters', async () => {
  const trip = await insertTrip(t.db, own.agencyId);
  const res = await get(`/api/v1/trips/${trip.id}?expand=all`);
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: 'invalid_request', param: 'expand' });
});
