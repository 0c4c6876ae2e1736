// The precompiled lookups the API serves by id answer exactly what the kysely finders they were
// compiled from answer: for visible objects and for every kind of invisible one.
import { sql } from 'kysely';
import { createDb } from '@trips/db';
import { findContact } from '@trips/db/contacts';
import { findContactPrecompiled, findPaymentPrecompiled, findTripPrecompiled } from '@trips/db/fast-paths';
import { findPayment } from '@trips/db/payments';
import { findTrip } from '@trips/db/trips';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, insertContact, insertTrip, type Fixture } from './support.ts';

let t: TestDatabase;
let own: Fixture;
let other: Fixture;

beforeAll(async () => {
  t = await createTestDatabase();
  own = await agencyWithKey(t.db);
  other = await agencyWithKey(t.db);
});
afterAll(() => t.drop());

test('trips: with and without itinerary, a template, another agency, a missing id', async () => {
  const withItinerary = await insertTrip(t.db, own.agencyId, {
    start_date: '2027-04-10',
    end_date: '2027-04-16',
  });
  await t.db.insertInto('itineraries').values({ trip_id: withItinerary.id, non_golfers: 2 }).execute();
  const plain = await insertTrip(t.db, own.agencyId, { status: 'confirmed' });
  const template = await insertTrip(t.db, own.agencyId, { is_template: true });
  const ids = [withItinerary.id, plain.id, template.id, 'trp_missing', "trp_'; --"];
  for (const agencyId of [own.agencyId, other.agencyId]) {
    for (const id of ids) {
      expect(await findTripPrecompiled(t.db, agencyId, id)).toEqual(await findTrip(t.db, agencyId, id));
    }
  }
  expect(await findTripPrecompiled(t.db, own.agencyId, withItinerary.id)).toMatchObject({
    id: withItinerary.id,
    non_golfers: 2,
    start_date: '2027-04-10',
  });
  expect(await findTripPrecompiled(t.db, own.agencyId, template.id)).toBeUndefined();
  expect(await findTripPrecompiled(t.db, other.agencyId, plain.id)).toBeUndefined();
});

test('payments: shown, draft, cancelled, on a template; contacts with their trips', async () => {
  const trip = await insertTrip(t.db, own.agencyId);
  const template = await insertTrip(t.db, own.agencyId, { is_template: true });
  const base = {
    agency_id: own.agencyId,
    trip_id: trip.id,
    description: 'Deposit',
    amount: 1,
    currency: 'EUR',
  };
  const payments = await t.db
    .insertInto('payments')
    .values([
      { ...base, visibility: 'shown' },
      { ...base, visibility: 'draft' },
      { ...base, visibility: 'shown', cancelled_at: new Date() },
      { ...base, visibility: 'shown', trip_id: template.id },
    ])
    .returning('id')
    .execute();
  const contact = await insertContact(t.db, own.agencyId, [trip.id, template.id]);
  for (const agencyId of [own.agencyId, other.agencyId]) {
    for (const { id } of [...payments, { id: 'pay_missing' }]) {
      expect(await findPaymentPrecompiled(t.db, agencyId, id)).toEqual(await findPayment(t.db, agencyId, id));
    }
    for (const id of [contact.id, 'con_missing']) {
      expect(await findContactPrecompiled(t.db, agencyId, id)).toEqual(await findContact(t.db, agencyId, id));
    }
  }
  expect(await findPaymentPrecompiled(t.db, own.agencyId, payments[0]!.id)).toMatchObject({ amount: 1 });
  expect(await findContactPrecompiled(t.db, own.agencyId, contact.id)).toMatchObject({ trip_ids: [trip.id] });
});

test('each lookup is prepared once per connection, so Postgres does not plan it on every request', async () => {
  // One connection, so the statements read back are the ones the lookups prepared.
  const db = createDb(t.url, { max: 1 });
  try {
    const prepared = async () =>
      (
        await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(db)
      ).rows.map((r) => r.name.replace(/_[0-9a-f]{12}$/, ''));
    expect(await prepared()).toEqual([]);
    const trip = await insertTrip(t.db, own.agencyId);
    for (let i = 0; i < 3; i++) {
      expect(await findTripPrecompiled(db, own.agencyId, trip.id)).toMatchObject({ id: trip.id });
      await findPaymentPrecompiled(db, own.agencyId, 'pay_missing');
      await findContactPrecompiled(db, own.agencyId, 'con_missing');
    }
    expect(await prepared()).toEqual(['find_contact', 'find_payment', 'find_trip']);
  } finally {
    await db.destroy();
  }
});
