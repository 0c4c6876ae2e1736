import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';

let t: TestDatabase;
let agencyId: string;
beforeAll(async () => {
  t = await createTestDatabase();
  ({ id: agencyId } = await t.db
    .insertInto('agencies')
    .values({ name: 'Fairway Tours' })
    .returning('id')
    .executeTakeFirstOrThrow());
});
afterAll(() => t.drop());

const validTrip = () => ({ agency_id: agencyId, title: 'Algarve spring', num_days: 7 });

async function insertTrip(values: Record<string, unknown>) {
  return t.db
    .insertInto('trips')
    .values({ ...validTrip(), ...values } as never)
    .returning(['id', 'updated_at'])
    .executeTakeFirstOrThrow();
}

test('ids carry their type prefix', async () => {
  const trip = await insertTrip({});
  expect(trip.id).toMatch(/^trp_[0-9A-Za-z]{16}$/);
  expect(agencyId).toMatch(/^agy_[0-9A-Za-z]{16}$/);
});

test.each([
  ['trips', 'trp', { agency_id: 'AGENCY', title: 'T', num_days: 1 }],
  ['payments', 'pay', { agency_id: 'AGENCY', trip_id: 'TRIP', description: 'D', amount: 1, currency: 'EUR' }],
  ['contacts', 'con', { agency_id: 'AGENCY', first_name: 'Ada', last_name: 'Lovelace' }],
] as const)('%s: a writer that sets its own id keeps to the %s_ prefix of D4', async (table, prefix, row) => {
  const trip = await insertTrip({});
  const values = (id: string) =>
    JSON.parse(
      JSON.stringify({ ...row, id })
        .replace('AGENCY', agencyId)
        .replace('TRIP', trip.id),
    );
  const insert = (id: string) => t.db.insertInto(table).values(values(id)).execute();
  for (const id of ['legacy-42', `${prefix}`, `${prefix}_`, `${prefix}_a b`, `x${prefix}_abc`]) {
    await expect(insert(id)).rejects.toThrow(new RegExp(`${table}_id_has_prefix`));
  }
  await insert(`${prefix}_Own-id_42`);
});

test.each([
  ['an unknown status', { status: 'archived' }, /trips_status_check/],
  ['an end date without a start date', { end_date: '2027-03-10' }, /trips_end_date_needs_start_date/],
  [
    'an end date before the start date',
    { start_date: '2027-03-10', end_date: '2027-03-09', num_days: 1 },
    /trips_end_date_not_before_start/,
  ],
  [
    'num_days that contradicts the dates',
    { start_date: '2027-03-01', end_date: '2027-03-07', num_days: 6 },
    /trips_num_days_matches_dates/,
  ],
  ['num_days of zero', { num_days: 0 }, /trips_num_days_check/],
  ['a published page without a url', { client_page_published: true }, /trips_url_exactly_when_published/],
  [
    'a url on an unpublished page',
    { client_page_url: 'https://x.example/p' },
    /trips_url_exactly_when_published/,
  ],
  [
    'a plain-http page url',
    { client_page_published: true, client_page_url: 'http://x.example/p' },
    /trips_url_is_https/,
  ],
  ['negative golfers', { golfers: -1 }, /trips_golfers_check/],
])('a trip with %s is refused', async (_what, values, constraint) => {
  await expect(insertTrip(values)).rejects.toThrow(constraint);
});

test('valid date shapes are accepted: flexible, start only, start and end', async () => {
  await insertTrip({});
  await insertTrip({ start_date: '2027-03-01' });
  await insertTrip({ start_date: '2027-03-01', end_date: '2027-03-07' });
});

test('updated_at is the writing transaction start, whatever the writer sends', async () => {
  const trip = await insertTrip({ updated_at: '2001-01-01T00:00:00Z' });
  expect(trip.updated_at.getFullYear()).toBeGreaterThan(2020);
});

test('an itinerary change touches its trip updated_at', async () => {
  const trip = await insertTrip({});
  await sql`SELECT pg_sleep(0.01)`.execute(t.db);
  await t.db.insertInto('itineraries').values({ trip_id: trip.id, non_golfers: 2 }).execute();
  const after = await t.db
    .selectFrom('trips')
    .select('updated_at')
    .where('id', '=', trip.id)
    .executeTakeFirstOrThrow();
  expect(after.updated_at.getTime()).toBeGreaterThan(trip.updated_at.getTime());
  // Deleting the trip cascades through the itinerary without tripping the touch trigger.
  await t.db.deleteFrom('trips').where('id', '=', trip.id).execute();
});

test('a payment must belong to the same agency as its trip, and paid_at means paid in full', async () => {
  const trip = await insertTrip({});
  const other = await t.db
    .insertInto('agencies')
    .values({ name: 'Other' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const payment = { trip_id: trip.id, description: 'Deposit', amount: 50000, currency: 'EUR' };
  await expect(
    t.db
      .insertInto('payments')
      .values({ ...payment, agency_id: other.id })
      .execute(),
  ).rejects.toThrow(/foreign key/);
  await expect(
    t.db
      .insertInto('payments')
      .values({ ...payment, agency_id: agencyId, paid_at: new Date() })
      .execute(),
  ).rejects.toThrow(/payments_paid_at_exactly_when_paid_in_full/);
  await t.db
    .insertInto('payments')
    .values({ ...payment, agency_id: agencyId, amount_paid: 50000, paid_at: new Date() })
    .execute();
});

test('a key scope outside the catalogue is refused', async () => {
  await expect(
    t.db
      .insertInto('api_keys')
      .values({ agency_id: agencyId, prefix: 'tps_abc', hash: Buffer.alloc(32), scopes: ['trips:write'] })
      .execute(),
  ).rejects.toThrow(/api_keys_scopes_check/);
});
