import type { Insertable, Kysely } from 'kysely';
import type { Database, PaymentsTable } from '../schema.ts';
import { exactUpdatedAt, inSyncWindow, pageOf, type SyncPage, type SyncQuery } from './sync.ts';

const paymentColumns = [
  'p.id',
  'p.trip_id',
  'p.description',
  'p.amount',
  'p.currency',
  'p.due_date',
  'p.paid_at',
  'p.created_at',
  'p.updated_at',
] as const;

/**
 * What the client sees is what the API sees: drafts, cancelled payments and the payments of a
 * template (which is not a trip) do not exist (D5).
 */
function visiblePayments(db: Kysely<Database>, agencyId: string) {
  return db
    .selectFrom('payments as p')
    .innerJoin('trips as pt', 'pt.id', 'p.trip_id')
    .where('pt.is_template', '=', false)
    .where('p.agency_id', '=', agencyId)
    .where('p.visibility', '=', 'shown')
    .where('p.cancelled_at', 'is', null);
}

export async function findPayment(db: Kysely<Database>, agencyId: string, id: string) {
  return visiblePayments(db, agencyId).select(paymentColumns).where('p.id', '=', id).executeTakeFirst();
}

export type PaymentRecord = NonNullable<Awaited<ReturnType<typeof findPayment>>>;

export async function listPayments(
  db: Kysely<Database>,
  agencyId: string,
  query: SyncQuery,
): Promise<SyncPage<PaymentRecord>> {
  const builder = visiblePayments(db, agencyId).select([
    ...paymentColumns,
    exactUpdatedAt('p.updated_at').as('exact_updated_at'),
  ]);
  const rows = await (await inSyncWindow(db, builder, 'p', query)).execute();
  return pageOf(rows, query.limit);
}

export type NewPayment = Omit<Insertable<PaymentsTable>, 'agency_id' | 'trip_id'>;

/** Inserts a payment of a trip; answers its id. For seeding (tripctl demo), as insertTrip. */
export async function insertPayment(
  db: Kysely<Database>,
  agencyId: string,
  tripId: string,
  payment: NewPayment,
): Promise<string> {
  const { id } = await db
    .insertInto('payments')
    .values({ ...payment, agency_id: agencyId, trip_id: tripId })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}
