import type { NewTrip } from '@trips/db/trips';
import { day, daysAgo, fixedDates } from './demo-dates.ts';

/** A trip of the demo book; `key` names it for the payments and contacts that refer to it. */
export type TripSeed = NewTrip & { key: string };

/** Marks a trip's client page live at `slug`. */
type ClientPage = (slug: string) => Pick<NewTrip, 'client_page_published' | 'client_page_url'>;

/**
 * The demo book of one golf travel agency: every trip status, the three date shapes, trips with
 * and without an itinerary, live and unpublished client pages, a template, and payments in each
 * state of their life. Dates are relative to `today` so the active trip is always under way.
 */
export function demoTrips(today: Date, pageBase: string): TripSeed[] {
  const page = (slug: string) => ({ client_page_published: true, client_page_url: `${pageBase}/${slug}` });
  return [...openTrips(today, page), ...bookedTrips(today, page), ...droppedTrips(today)];
}

/** Proposals and a trip being planned. */
function openTrips(today: Date, page: ClientPage): TripSeed[] {
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
  ];
}

/** Confirmed, under way and completed. */
function bookedTrips(today: Date, page: ClientPage): TripSeed[] {
  return [
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
  ];
}

/** Declined and cancelled. */
function droppedTrips(today: Date): TripSeed[] {
  return [
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

export function demoTemplate(today: Date): TripSeed {
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
