import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Database, PaymentsTable, TripsTable } from '../schema.ts';
import { createAgency } from './agencies.ts';
import { createUser } from './users.ts';
import { createApiKey } from './api-keys.ts';

const DAY_MS = 86_400_000;

/** A calendar date `offset` days from `today`, as the 'YYYY-MM-DD' a `date` column takes. */
function day(today: Date, offset: number): string {
  const base = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  return new Date(base + offset * DAY_MS).toISOString().slice(0, 10);
}

function daysAgo(today: Date, days: number): Date {
  return new Date(today.getTime() - days * DAY_MS);
}

/** num_days must equal end - start + 1 when an end date is set (trips_num_days_matches_dates). */
function fixedDates(today: Date, startOffset: number, numDays: number) {
  return {
    start_date: day(today, startOffset),
    end_date: day(today, startOffset + numDays - 1),
    num_days: numDays,
  };
}

type TripSeed = Omit<Insertable<TripsTable>, 'agency_id'> & {
  key: string;
  itinerary?: { non_golfers: number; summary: string };
  options?: { name: string; description: string | null; price_amount: number | null }[];
};

type PaymentSeed = Omit<Insertable<PaymentsTable>, 'agency_id' | 'trip_id'> & { trip: string };

/**
 * The demo book of one golf travel agency: every trip status, the three date shapes, trips with
 * and without an itinerary, live and unpublished client pages, a template, and payments in each
 * state of their life. Dates are relative to `today` so the active trip is always under way.
 */
function demoTrips(today: Date, pageBase: string): TripSeed[] {
  const page = (slug: string) => ({ client_page_published: true, client_page_url: `${pageBase}/${slug}` });
  return [
    {
      key: 'algarve',
      title: 'Algarve Spring Golf Week',
      status: 'proposal',
      region: 'Algarve, Portugal',
      base_camp: 'Vilamoura',
      // Flexible: the group knows the length but has not picked a week yet.
      num_days: 7,
      golfers: 8,
      client_page_headline: 'Seven days of sunshine golf on the Algarve',
      created_at: daysAgo(today, 3),
    },
    {
      key: 'rome',
      title: 'Rome Ryder Cup Getaway',
      status: 'proposal',
      region: 'Lazio, Italy',
      base_camp: 'Rome',
      // Start only: the first day is booked, the return is still open.
      start_date: day(today, 120),
      num_days: 5,
      golfers: 6,
      ...page('rome-ryder-cup-getaway'),
      client_page_headline: 'Marco Simone and the Eternal City',
      created_at: daysAgo(today, 6),
    },
    {
      key: 'standrews',
      title: 'St Andrews Old Course Pilgrimage',
      status: 'planning',
      region: 'Fife, Scotland',
      base_camp: 'St Andrews',
      ...fixedDates(today, 75, 6),
      golfers: 4,
      ...page('st-andrews-old-course-pilgrimage'),
      accepted_at: daysAgo(today, 10),
      created_at: daysAgo(today, 30),
      itinerary: {
        non_golfers: 2,
        summary: 'Old Course ballot, Kingsbarns, Carnoustie; spa days for partners.',
      },
      options: [
        {
          name: 'Links trio',
          description: 'Old Course ballot, New Course, Jubilee',
          price_amount: 185000,
        },
        {
          name: 'Championship upgrade',
          description: 'Guaranteed Old Course tee time, Kingsbarns and Carnoustie',
          price_amount: 295000,
        },
      ],
    },
    {
      key: 'costadelsol',
      title: 'Costa del Sol Winter Sun',
      status: 'confirmed',
      region: 'Andalusia, Spain',
      base_camp: 'Marbella',
      ...fixedDates(today, 30, 8),
      golfers: 12,
      ...page('costa-del-sol-winter-sun'),
      client_page_message: 'Your tee times at Valderrama and La Reserva are confirmed.',
      accepted_at: daysAgo(today, 40),
      created_at: daysAgo(today, 60),
      itinerary: {
        non_golfers: 0,
        summary: 'Valderrama, La Reserva, Finca Cortesin, Real Club de Golf Sotogrande.',
      },
      options: [
        {
          name: 'Valderrama add-on',
          description: 'A second round at Valderrama',
          price_amount: 42000,
        },
      ],
    },
    {
      key: 'kiawah',
      title: 'Kiawah Island Ocean Course',
      status: 'active',
      region: 'South Carolina, USA',
      base_camp: 'Kiawah Island',
      // Under way: started two days ago.
      ...fixedDates(today, -2, 6),
      golfers: 8,
      ...page('kiawah-island-ocean-course'),
      accepted_at: daysAgo(today, 90),
      created_at: daysAgo(today, 120),
      itinerary: {
        non_golfers: 3,
        summary: 'Ocean Course, Osprey Point, Turtle Point; Charleston day for partners.',
      },
    },
    {
      key: 'pebble',
      title: 'Pebble Beach & Monterey',
      status: 'completed',
      region: 'California, USA',
      base_camp: 'Carmel-by-the-Sea',
      ...fixedDates(today, -45, 5),
      golfers: 4,
      // The page came down after the trip.
      accepted_at: daysAgo(today, 150),
      created_at: daysAgo(today, 200),
      itinerary: { non_golfers: 1, summary: 'Pebble Beach, Spyglass Hill, Spanish Bay.' },
    },
    {
      key: 'portrush',
      title: 'Royal County Down & Portrush',
      status: 'declined',
      region: 'Northern Ireland',
      base_camp: 'Newcastle',
      start_date: day(today, 200),
      num_days: 5,
      golfers: 8,
      created_at: daysAgo(today, 25),
    },
    {
      key: 'bandon',
      title: 'Bandon Dunes Buddies Trip',
      status: 'cancelled',
      region: 'Oregon, USA',
      base_camp: 'Bandon',
      num_days: 4,
      golfers: 16,
      // Accepted, then called off by the group.
      accepted_at: daysAgo(today, 50),
      created_at: daysAgo(today, 80),
    },
  ];
}

function demoTemplate(today: Date): TripSeed {
  return {
    key: 'template',
    is_template: true,
    title: 'Template: Algarve 7 nights, 5 rounds',
    status: 'proposal',
    region: 'Algarve, Portugal',
    base_camp: 'Vale do Lobo',
    num_days: 7,
    golfers: 4,
    created_at: daysAgo(today, 365),
    itinerary: {
      non_golfers: 0,
      summary: 'Quinta do Lago South, Monte Rei, Vale do Lobo Royal, Onyria Palmares.',
    },
    options: [
      { name: '4 rounds', description: 'Four rounds on the Golden Triangle', price_amount: 99000 },
      { name: '5 rounds with Monte Rei', description: null, price_amount: null },
    ],
  };
}

/** Amounts are minor units. paid_at is set exactly when amount_paid = amount (the schema's rule). */
function demoPayments(today: Date): PaymentSeed[] {
  return [
    // Still being prepared: invisible to the client, the API and events.
    { trip: 'standrews', description: 'Deposit', amount: 60000, currency: 'GBP', visibility: 'draft' },
    {
      trip: 'costadelsol',
      description: 'Deposit (25%)',
      amount: 120000,
      currency: 'EUR',
      visibility: 'shown',
      amount_paid: 120000,
      paid_at: daysAgo(today, 38),
      created_at: daysAgo(today, 40),
      due_date: day(today, -35),
    },
    {
      trip: 'costadelsol',
      description: 'Balance',
      amount: 360000,
      currency: 'EUR',
      visibility: 'shown',
      due_date: day(today, 14),
    },
    { trip: 'costadelsol', description: 'Gala dinner at Finca Cortesin', amount: 54000, currency: 'EUR' },
    {
      trip: 'kiawah',
      description: 'Full package',
      amount: 1480000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 1480000,
      paid_at: daysAgo(today, 20),
      created_at: daysAgo(today, 88),
      due_date: day(today, -14),
    },
    {
      // Shown and partly paid: still open.
      trip: 'kiawah',
      description: 'Caddies and extras',
      amount: 96000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 40000,
      due_date: day(today, 3),
    },
    {
      trip: 'pebble',
      description: 'Full package',
      amount: 980000,
      currency: 'USD',
      visibility: 'shown',
      amount_paid: 980000,
      paid_at: daysAgo(today, 70),
      created_at: daysAgo(today, 148),
      due_date: day(today, -60),
    },
    {
      // Shown, then withdrawn when the trip was called off.
      trip: 'bandon',
      description: 'Deposit',
      amount: 320000,
      currency: 'USD',
      visibility: 'shown',
      due_date: day(today, -20),
      cancelled_at: daysAgo(today, 21),
      created_at: daysAgo(today, 49),
    },
  ];
}

const DEMO_CONTACTS = [
  {
    key: 'fiona',
    first_name: 'Fiona',
    last_name: 'MacLeod',
    email: 'fiona.macleod@example.com',
    phone: '+44 7700 900123',
    trips: ['standrews', 'pebble'],
  },
  {
    key: 'jack',
    first_name: 'Jack',
    last_name: 'Nicholls',
    email: 'jack@example.com',
    phone: null,
    trips: ['kiawah'],
  },
  {
    key: 'ana',
    first_name: 'Ana',
    last_name: 'Ferreira',
    email: null,
    phone: '+351 912 345 678',
    trips: ['algarve', 'costadelsol'],
  },
  {
    key: 'tom',
    first_name: 'Tom',
    last_name: 'Watson-Hale',
    email: 'tom.wh@example.com',
    phone: '+1 843 555 0142',
    trips: ['kiawah', 'bandon'],
  },
  {
    key: 'claire',
    first_name: 'Claire',
    last_name: 'Dubois',
    email: 'claire.dubois@example.com',
    phone: null,
    trips: ['costadelsol'],
  },
  // A lead who is on no trip yet.
  {
    key: 'sam',
    first_name: 'Sam',
    last_name: 'Okafor',
    email: 'sam.okafor@example.com',
    phone: null,
    trips: [],
  },
];

export interface DemoSeedInput {
  name?: string;
  /** Scopes of the demo key; the whole catalogue unless told. */
  scopes: string[];
  /** Dates are laid out around this day. */
  today?: Date;
  /** Where the client pages live; must be https (trips_url_is_https). */
  clientPageBase?: string;
}

export interface DemoSeed {
  agencyId: string;
  agencyName: string;
  ownerId: string;
  ownerEmail: string;
  key: { id: string; key: string; prefix: string; scopes: string[] };
  /** API-visible trips, in the order seeded; a good one to fetch first is `featuredTripId`. */
  tripIds: string[];
  featuredTripId: string;
  templateId: string;
  paymentIds: string[];
  contactIds: string[];
}

async function insertTrip(trx: Transaction<Database>, agencyId: string, seed: TripSeed): Promise<string> {
  const { key: _key, itinerary, options, ...values } = seed;
  const { id } = await trx
    .insertInto('trips')
    .values({ ...values, agency_id: agencyId })
    .returning('id')
    .executeTakeFirstOrThrow();
  if (itinerary)
    await trx
      .insertInto('itineraries')
      .values({ trip_id: id, ...itinerary })
      .execute();
  for (const [position, option] of (options ?? []).entries()) {
    await trx
      .insertInto('trip_options')
      .values({ trip_id: id, position, ...option })
      .execute();
  }
  return id;
}

/**
 * Creates one independent demo agency (API enabled, subscription active) with an owner, golf
 * trips, payments, contacts and a key, all in one transaction: a failure leaves nothing behind.
 * Seeding again makes another agency; the owner's e-mail carries the agency id to stay unique.
 */
export async function seedDemoAgency(db: Kysely<Database>, input: DemoSeedInput): Promise<DemoSeed> {
  const today = input.today ?? new Date();
  const pageBase = input.clientPageBase ?? 'https://trips.example.com/p';
  return db.transaction().execute(async (trx) => {
    const agency = await createAgency(trx, {
      name: input.name ?? 'Fairway Golf Travel (demo)',
      apiEnabled: true,
      subscriptionStatus: 'active',
    });
    const ownerEmail = `owner.${agency.id.slice(4).toLowerCase()}@fairway-demo.example`;
    const owner = await createUser(trx, { agencyId: agency.id, email: ownerEmail, role: 'owner' });

    const tripIdsByKey = new Map<string, string>();
    const tripIds: string[] = [];
    for (const seed of demoTrips(today, pageBase)) {
      const id = await insertTrip(trx, agency.id, seed);
      tripIdsByKey.set(seed.key, id);
      tripIds.push(id);
    }
    const templateId = await insertTrip(trx, agency.id, demoTemplate(today));

    const paymentIds: string[] = [];
    for (const { trip, ...payment } of demoPayments(today)) {
      const { id } = await trx
        .insertInto('payments')
        .values({ ...payment, agency_id: agency.id, trip_id: tripIdsByKey.get(trip)! })
        .returning('id')
        .executeTakeFirstOrThrow();
      paymentIds.push(id);
    }

    const contactIds: string[] = [];
    for (const { key: _key, trips, ...contact } of DEMO_CONTACTS) {
      const { id } = await trx
        .insertInto('contacts')
        .values({ ...contact, agency_id: agency.id })
        .returning('id')
        .executeTakeFirstOrThrow();
      contactIds.push(id);
      for (const trip of trips) {
        await trx
          .insertInto('trip_contacts')
          .values({ agency_id: agency.id, trip_id: tripIdsByKey.get(trip)!, contact_id: id })
          .execute();
      }
    }

    const key = await createApiKey(trx, { agencyId: agency.id, scopes: input.scopes, name: 'Demo key' });
    return {
      agencyId: agency.id,
      agencyName: agency.name,
      ownerId: owner.id,
      ownerEmail,
      key: { id: key.id, key: key.key, prefix: key.prefix, scopes: key.scopes },
      tripIds,
      // Confirmed, published, with an itinerary: shows the most fields filled in.
      featuredTripId: tripIdsByKey.get('costadelsol')!,
      templateId,
      paymentIds,
      contactIds,
    };
  });
}
