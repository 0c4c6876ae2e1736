import { createHash } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson } from './helpers.ts';

interface SeedOutput {
  agency_id: string;
  owner_user_id: string;
  key_id: string;
  key: string;
  trip_ids: string[];
  template_id: string;
  payment_ids: string[];
  contact_ids: string[];
  curl: string;
}

let t: TestDatabase;
let env: Record<string, string>;
let seed: SeedOutput;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
  seed = await cliJson<SeedOutput>(['demo', 'seed'], env);
});
afterAll(() => t.drop());

const tripsOf = (agencyId: string) =>
  t.db.selectFrom('trips').selectAll().where('agency_id', '=', agencyId).execute();

test('a demo agency with API access, an active subscription and an owner', async () => {
  const agency = await t.db
    .selectFrom('agencies')
    .selectAll()
    .where('id', '=', seed.agency_id)
    .executeTakeFirstOrThrow();
  expect(agency).toMatchObject({ api_enabled: true, subscription_status: 'active' });
  const owner = await t.db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', seed.owner_user_id)
    .executeTakeFirstOrThrow();
  expect(owner).toMatchObject({ agency_id: seed.agency_id, role: 'owner' });
});

test('trips in every status, all of them listed in trip_ids, and the template apart', async () => {
  const trips = await tripsOf(seed.agency_id);
  const real = trips.filter((trip) => !trip.is_template);
  expect(new Set(real.map((trip) => trip.status))).toEqual(
    new Set(['proposal', 'planning', 'confirmed', 'active', 'completed', 'declined', 'cancelled']),
  );
  expect([...seed.trip_ids].sort()).toEqual(real.map((trip) => trip.id).sort());
  const template = trips.find((trip) => trip.id === seed.template_id);
  expect(template?.is_template).toBe(true);
  expect(seed.trip_ids).not.toContain(seed.template_id);
});

test('fixed dates with start and end, start only, and flexible', async () => {
  const real = (await tripsOf(seed.agency_id)).filter((trip) => !trip.is_template);
  const shapes = new Set(
    real.map((trip) =>
      trip.start_date === null ? 'flexible' : trip.end_date === null ? 'start only' : 'start and end',
    ),
  );
  expect(shapes).toEqual(new Set(['flexible', 'start only', 'start and end']));
  // The active trip is under way today, whenever the demo is seeded.
  const active = real.find((trip) => trip.status === 'active')!;
  const today = new Date().toISOString().slice(0, 10);
  expect(active.start_date! <= today && today <= active.end_date!).toBe(true);
});

test('trips with and without an itinerary, and trip options', async () => {
  const withItinerary = await t.db
    .selectFrom('itineraries')
    .select('trip_id')
    .where('trip_id', 'in', seed.trip_ids)
    .execute();
  expect(withItinerary.length).toBeGreaterThan(0);
  expect(withItinerary.length).toBeLessThan(seed.trip_ids.length);
  const options = await t.db
    .selectFrom('trip_options')
    .select('trip_id')
    .where('trip_id', 'in', seed.trip_ids)
    .execute();
  expect(options.length).toBeGreaterThan(0);
});

test('published client pages on https and unpublished ones; accepted_at on accepted trips', async () => {
  const real = (await tripsOf(seed.agency_id)).filter((trip) => !trip.is_template);
  const published = real.filter((trip) => trip.client_page_published);
  expect(published.length).toBeGreaterThan(0);
  expect(published.length).toBeLessThan(real.length);
  for (const trip of published) expect(trip.client_page_url).toMatch(/^https:\/\//);
  for (const status of ['confirmed', 'active', 'completed']) {
    expect(real.find((trip) => trip.status === status)?.accepted_at).toBeInstanceOf(Date);
  }
  for (const status of ['proposal', 'declined']) {
    expect(real.filter((trip) => trip.status === status).every((trip) => trip.accepted_at === null)).toBe(
      true,
    );
  }
});

test('payments in draft, shown and open, paid in full, and cancelled', async () => {
  const payments = await t.db
    .selectFrom('payments')
    .selectAll()
    .where('agency_id', '=', seed.agency_id)
    .execute();
  expect(payments.map((p) => p.id).sort()).toEqual([...seed.payment_ids].sort());
  const states = new Set(
    payments.map((p) =>
      p.cancelled_at !== null
        ? 'cancelled'
        : p.visibility === 'draft'
          ? 'draft'
          : p.paid_at !== null
            ? 'paid'
            : 'open',
    ),
  );
  expect(states).toEqual(new Set(['draft', 'open', 'paid', 'cancelled']));
  for (const p of payments.filter((p) => p.paid_at !== null)) expect(p.amount_paid).toBe(p.amount);
  for (const p of payments) expect(seed.trip_ids).toContain(p.trip_id);
});

test('contacts, some linked to trips', async () => {
  const links = await t.db
    .selectFrom('trip_contacts')
    .selectAll()
    .where('contact_id', 'in', seed.contact_ids)
    .execute();
  expect(links.length).toBeGreaterThan(0);
  for (const link of links) expect(seed.trip_ids).toContain(link.trip_id);
});

test('a key with every scope, stored as a hash, and a curl line that uses it', async () => {
  const key = await t.db
    .selectFrom('api_keys')
    .selectAll()
    .where('hash', '=', createHash('sha256').update(seed.key).digest())
    .executeTakeFirstOrThrow();
  expect(key).toMatchObject({ id: seed.key_id, agency_id: seed.agency_id, revoked_at: null });
  expect([...key.scopes].sort()).toEqual(['contacts:read', 'events:read', 'payments:read', 'trips:read']);
  const match =
    /^curl -H "Authorization: Bearer (\S+)" http:\/\/localhost:3000\/api\/v1\/trips\/(trp_\w+)$/.exec(
      seed.curl,
    );
  expect(match?.[1]).toBe(seed.key);
  expect(seed.trip_ids).toContain(match?.[2]);
});

test('--base-url and PORT set the address in the curl line', async () => {
  const custom = await cliJson<SeedOutput>(['demo', 'seed', '--base-url', 'https://api.example.com/'], env);
  expect(custom.curl).toMatch(/ https:\/\/api\.example\.com\/api\/v1\/trips\/trp_\w+$/);
  const port = await cliJson<SeedOutput>(['demo', 'seed'], { ...env, PORT: '4321' });
  expect(port.curl).toMatch(/ http:\/\/localhost:4321\/api\/v1\/trips\/trp_\w+$/);
});

test('seeding again makes a second, independent agency', async () => {
  const again = await cliJson<SeedOutput>(['demo', 'seed'], env);
  expect(again.agency_id).not.toBe(seed.agency_id);
  expect(again.key).not.toBe(seed.key);
  expect(again.trip_ids.filter((id) => seed.trip_ids.includes(id))).toEqual([]);
  expect((await tripsOf(again.agency_id)).length).toBe(again.trip_ids.length + 1);
});

test('the human output prints the key once and the curl line', async () => {
  const result = await cli(['demo', 'seed', '--name', 'Birdie Breaks'], env);
  expect(result.code).toBe(0);
  const key = /tps_[0-9A-Za-z]+/.exec(result.stdout)?.[0];
  expect(key).toBeDefined();
  expect(result.stdout).toMatch(/"Birdie Breaks"/);
  expect(result.stdout).toMatch(
    new RegExp(`^  curl -H "Authorization: Bearer ${key}" http://localhost:3000/api/v1/trips/trp_\\w+$`, 'm'),
  );
});
