import { sql, type Transaction } from 'kysely';
import type { Database } from '@trips/db';
import type { ActivityContext } from './context.ts';
import { visible, type Trip } from './model.ts';
import { event, one, ref, type Choice } from './writes.ts';

// Trips: creating one, moving its status, the client accepting it, publishing its page, and
// deleting it. Edits (trip.updated) are in trip-edits.ts, templates in templates.ts.

/** Realistic next statuses (the database accepts any; the host application is this picky). */
const NEXT_STATUS: Record<string, string[]> = {
  proposal: ['planning', 'declined', 'cancelled'],
  planning: ['confirmed', 'cancelled'],
  confirmed: ['active', 'cancelled'],
  active: ['completed'],
  completed: [],
  declined: ['proposal'],
  cancelled: [],
};

export const PLACES: [region: string, baseCamp: string][] = [
  ['Algarve, Portugal', 'Vilamoura'],
  ['Fife, Scotland', 'St Andrews'],
  ['Andalusia, Spain', 'Marbella'],
  ['South Carolina, USA', 'Kiawah Island'],
  ['California, USA', 'Carmel-by-the-Sea'],
  ['County Down, Northern Ireland', 'Newcastle'],
  ['Oregon, USA', 'Bandon'],
  ['Lazio, Italy', 'Rome'],
  ['Western Cape, South Africa', 'Stellenbosch'],
  ['Kent, England', 'Sandwich'],
];
const TRIP_NAMES = ['Spring Golf Week', 'Links Pilgrimage', 'Winter Sun', 'Buddies Trip', 'Open Getaway'];
const OPTIONS = ['Extra round', 'Caddie package', 'Course upgrade', 'Spa day', 'Airport transfer'];

/** Writes a new trip or template (not yet in the model) and answers it. */
export async function insertTrip(
  ctx: ActivityContext,
  trx: Transaction<Database>,
  template: boolean,
): Promise<Trip> {
  const { agencyId, choose, int, next } = ctx;
  const [region, baseCamp] = choose(PLACES)!;
  const title = `${template ? 'Template: ' : ''}${baseCamp} ${choose(TRIP_NAMES)} #${next()}`;
  const golfers = int(2, 16);
  const numDays = int(3, 9);
  const { id } = await one(
    trx,
    sql<{
      id: string;
    }>`INSERT INTO trips (agency_id, is_template, title, region, base_camp, num_days, golfers)
        VALUES (${agencyId}, ${template}, ${title}, ${region}, ${baseCamp}, ${numDays}, ${golfers}) RETURNING id`,
  );
  return {
    id,
    template,
    title,
    status: 'proposal',
    published: false,
    accepted: false,
    region,
    golfers,
    numDays,
    start: null,
    itinerary: false,
    options: [],
  };
}

export const addItinerary = ({ int, next }: ActivityContext, trx: Transaction<Database>, trip: Trip) =>
  sql`INSERT INTO itineraries (trip_id, non_golfers, summary)
        VALUES (${trip.id}, ${int(0, 4)}, ${`Rounds at ${trip.region}, day ${next()}`})`.execute(trx);

export const addOption = async ({ choose, int }: ActivityContext, trx: Transaction<Database>, trip: Trip) =>
  (
    await one(
      trx,
      sql<{ id: string }>`INSERT INTO trip_options (trip_id, name, price_amount, position)
          VALUES (${trip.id}, ${choose(OPTIONS)!}, ${int(2, 60) * 1000}, ${trip.options.length}) RETURNING id`,
    )
  ).id;

export function newTrip(ctx: ActivityContext): Choice {
  const { chance, liveTrips, trips } = ctx;
  return {
    makes: ['trip.created', 'trip.updated'],
    weight: 3,
    pick: () =>
      liveTrips().length >= 25
        ? undefined
        : {
            action: 'trip.create',
            run: async (trx) => {
              const trip = await insertTrip(ctx, trx, false);
              // Often with its itinerary in the same transaction: that part opens trip.updated.
              const withItinerary = chance(0.4);
              if (withItinerary) await addItinerary(ctx, trx, trip);
              return {
                events: [event('trip.created', trip.id)],
                touched: withItinerary ? [ref('trip', trip.id)] : [],
                deleted: [],
                apply: () => trips.set(trip.id, { ...trip, itinerary: withItinerary }),
              };
            },
          },
  };
}

export function tripStatusChange({ choose, liveTrips }: ActivityContext): Choice {
  return {
    makes: ['trip.status_changed'],
    weight: 2,
    pick: () => {
      const trip = choose(liveTrips().filter((t) => NEXT_STATUS[t.status]!.length));
      if (!trip) return undefined;
      const to = choose(NEXT_STATUS[trip.status]!)!;
      return {
        action: 'trip.status',
        run: async (trx) => {
          await sql`UPDATE trips SET status = ${to} WHERE id = ${trip.id}`.execute(trx);
          return {
            events: [event('trip.status_changed', trip.id, { from: trip.status, to })],
            touched: [],
            deleted: [],
            apply: () => (trip.status = to),
          };
        },
      };
    },
  };
}

export function tripAcceptance({ chance, choose, liveTrips, next }: ActivityContext): Choice {
  return {
    makes: ['trip.accepted', 'trip.status_changed', 'trip.updated'],
    weight: 1.5,
    pick: () => {
      const trip = choose(
        liveTrips().filter((t) => !t.accepted && ['proposal', 'planning'].includes(t.status)),
      );
      if (!trip) return undefined;
      return {
        action: 'trip.accept',
        run: async (trx) => {
          // The client accepts a proposal: one update moves it to planning, sets accepted_at and
          // often renames it, which makes three events from one change (D6).
          const from = trip.status;
          const renamed = chance(0.5) ? `${trip.title.replace(/ #\d+$/, '')} (booked) #${next()}` : undefined;
          await sql`UPDATE trips SET status = 'planning', accepted_at = now(), title = ${renamed ?? trip.title}
                       WHERE id = ${trip.id}`.execute(trx);
          return {
            events: [
              ...(from === 'planning'
                ? []
                : [event('trip.status_changed', trip.id, { from, to: 'planning' })]),
              event('trip.accepted', trip.id),
            ],
            touched: renamed ? [ref('trip', trip.id)] : [],
            deleted: [],
            apply: () => {
              trip.status = 'planning';
              trip.accepted = true;
              trip.title = renamed ?? trip.title;
            },
          };
        },
      };
    },
  };
}

export function tripPublishing({ choose, liveTrips }: ActivityContext): Choice {
  return {
    makes: ['trip.published', 'trip.unpublished'],
    weight: 1.5,
    pick: () => {
      const trip = choose(liveTrips());
      if (!trip) return undefined;
      const publish = !trip.published;
      return {
        action: publish ? 'trip.publish' : 'trip.unpublish',
        run: async (trx) => {
          const url = publish ? `https://trips.example.com/p/${trip.id}` : null;
          await sql`UPDATE trips SET client_page_published = ${publish}, client_page_url = ${url}
                       WHERE id = ${trip.id}`.execute(trx);
          return {
            events: [event(publish ? 'trip.published' : 'trip.unpublished', trip.id)],
            touched: [],
            deleted: [],
            apply: () => (trip.published = publish),
          };
        },
      };
    },
  };
}

export function tripDeletion(ctx: ActivityContext): Choice {
  const { choose, liveTrips, paymentsOf, contactsOf, trips, payments } = ctx;
  return {
    makes: ['trip.deleted', 'payment.deleted', 'contact.updated'],
    weight: 0.8,
    pick: () => {
      const trip = choose(
        liveTrips().filter((t) => ['completed', 'declined', 'cancelled'].includes(t.status)),
      );
      if (!trip) return undefined;
      return {
        action: 'trip.delete',
        run: async (trx) => {
          // Its payments and contact links go with it: a payment the client could see is
          // deleted (payment.deleted), and each linked contact left a trip (contact.updated).
          const shown = paymentsOf(trip.id).filter(visible);
          const linked = contactsOf(trip.id);
          await sql`DELETE FROM trips WHERE id = ${trip.id}`.execute(trx);
          return {
            events: [event('trip.deleted', trip.id), ...shown.map((p) => event('payment.deleted', p.id))],
            touched: linked.map((c) => ref('contact', c.id)),
            deleted: [ref('trip', trip.id), ...shown.map((p) => ref('payment', p.id))],
            apply: () => {
              trips.delete(trip.id);
              for (const p of paymentsOf(trip.id)) payments.delete(p.id);
              for (const c of linked) c.trips.delete(trip.id);
            },
          };
        },
      };
    },
  };
}
