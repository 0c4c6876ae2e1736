import type { Insertable, Kysely } from 'kysely';
import type { Database, TripsTable } from '../schema.ts';
import { exactUpdatedAt, inSyncWindow, pageOf, type SyncPage, type SyncQuery } from './sync.ts';

const tripColumns = [
  't.id',
  't.title',
  't.status',
  't.region',
  't.base_camp',
  't.start_date',
  't.end_date',
  't.num_days',
  't.golfers',
  't.client_page_published',
  't.client_page_url',
  't.accepted_at',
  't.created_at',
  't.updated_at',
] as const;

/** A trip of this agency, never a template; non_golfers is null when there is no itinerary. */
export async function findTrip(db: Kysely<Database>, agencyId: string, id: string) {
  return db
    .selectFrom('trips as t')
    .leftJoin('itineraries as i', 'i.trip_id', 't.id')
    .select([...tripColumns, 'i.non_golfers'])
    .where('t.id', '=', id)
    .where('t.agency_id', '=', agencyId)
    .where('t.is_template', '=', false)
    .executeTakeFirst();
}

export type TripRecord = NonNullable<Awaited<ReturnType<typeof findTrip>>>;
export type TripListRecord = Omit<TripRecord, 'non_golfers'>;

/** Trips in (updated_at, id) order for sync; see sync.ts for why the horizon bounds the page. */
export async function listTrips(
  db: Kysely<Database>,
  agencyId: string,
  query: SyncQuery,
): Promise<SyncPage<TripListRecord>> {
  const builder = db
    .selectFrom('trips as t')
    .select([...tripColumns, exactUpdatedAt('t.updated_at').as('exact_updated_at')])
    .where('t.agency_id', '=', agencyId)
    .where('t.is_template', '=', false);
  const rows = await (await inSyncWindow(db, builder, 't', query)).execute();
  return pageOf(rows, query.limit);
}

/** A trip to insert with its itinerary and its options, in the order of their positions. */
export type NewTrip = Omit<Insertable<TripsTable>, 'agency_id'> & {
  itinerary?: { non_golfers: number; summary: string };
  options?: { name: string; description: string | null; price_amount: number | null }[];
};

/**
 * Inserts a trip with its itinerary and options; answers its id. For seeding (tripctl demo): the
 * product writes trips, this service only reads them. Call it in a transaction.
 */
export async function insertTrip(db: Kysely<Database>, agencyId: string, trip: NewTrip): Promise<string> {
  const { itinerary, options, ...values } = trip;
  const { id } = await db
    .insertInto('trips')
    .values({ ...values, agency_id: agencyId })
    .returning('id')
    .executeTakeFirstOrThrow();
  if (itinerary)
    await db
      .insertInto('itineraries')
      .values({ trip_id: id, ...itinerary })
      .execute();
  for (const [position, option] of (options ?? []).entries()) {
    await db
      .insertInto('trip_options')
      .values({ trip_id: id, position, ...option })
      .execute();
  }
  return id;
}
