import { sql, type Insertable, type Kysely } from 'kysely';
import type { ContactsTable, Database } from '../schema.ts';
import { exactUpdatedAt, inSyncWindow, pageOf, type SyncPage, type SyncQuery } from './sync.ts';

/** The trips a contact is on, templates excluded since they are not trips (D5). */
const tripIds = sql<string[]>`array(
  SELECT tc.trip_id FROM trip_contacts tc JOIN trips t ON t.id = tc.trip_id
   WHERE tc.contact_id = c.id AND NOT t.is_template ORDER BY tc.trip_id)`;

const contactColumns = [
  'c.id',
  'c.first_name',
  'c.last_name',
  'c.email',
  'c.phone',
  'c.created_at',
  'c.updated_at',
] as const;

export async function findContact(db: Kysely<Database>, agencyId: string, id: string) {
  return db
    .selectFrom('contacts as c')
    .select([...contactColumns, tripIds.as('trip_ids')])
    .where('c.agency_id', '=', agencyId)
    .where('c.id', '=', id)
    .executeTakeFirst();
}

export type ContactRecord = NonNullable<Awaited<ReturnType<typeof findContact>>>;

export async function listContacts(
  db: Kysely<Database>,
  agencyId: string,
  query: SyncQuery,
): Promise<SyncPage<ContactRecord>> {
  const builder = db
    .selectFrom('contacts as c')
    .select([
      ...contactColumns,
      tripIds.as('trip_ids'),
      exactUpdatedAt('c.updated_at').as('exact_updated_at'),
    ])
    .where('c.agency_id', '=', agencyId);
  const rows = await (await inSyncWindow(db, builder, 'c', query)).execute();
  return pageOf(rows, query.limit);
}

type NewContact = Omit<Insertable<ContactsTable>, 'agency_id'>;

/** Inserts a contact; answers its id. For seeding (tripctl demo), as insertTrip. */
export async function insertContact(
  db: Kysely<Database>,
  agencyId: string,
  contact: NewContact,
): Promise<string> {
  const { id } = await db
    .insertInto('contacts')
    .values({ ...contact, agency_id: agencyId })
    .returning('id')
    .executeTakeFirstOrThrow();
  return id;
}

/** Puts a contact on a trip (trip_contacts). For seeding (tripctl demo), as insertTrip. */
export async function addContactToTrip(
  db: Kysely<Database>,
  agencyId: string,
  tripId: string,
  contactId: string,
): Promise<void> {
  await db
    .insertInto('trip_contacts')
    .values({ agency_id: agencyId, trip_id: tripId, contact_id: contactId })
    .execute();
}
