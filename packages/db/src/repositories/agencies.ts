import type { Kysely } from 'kysely';
import type { Database, SubscriptionStatus } from '../schema.ts';

export async function createAgency(
  db: Kysely<Database>,
  input: {
    name: string;
    apiEnabled?: boolean;
    subscriptionStatus?: SubscriptionStatus;
    trialEndsAt?: Date | null;
  },
) {
  return db
    .insertInto('agencies')
    .values({
      name: input.name,
      api_enabled: input.apiEnabled ?? false,
      subscription_status: input.subscriptionStatus ?? 'trialing',
      trial_ends_at: input.trialEndsAt ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Changes only the fields given; answers undefined when there is no such agency. */
export async function updateAgency(
  db: Kysely<Database>,
  id: string,
  changes: {
    name?: string;
    apiEnabled?: boolean;
    subscriptionStatus?: SubscriptionStatus;
    trialEndsAt?: Date | null;
  },
) {
  const set = {
    ...(changes.name !== undefined && { name: changes.name }),
    ...(changes.apiEnabled !== undefined && { api_enabled: changes.apiEnabled }),
    ...(changes.subscriptionStatus !== undefined && { subscription_status: changes.subscriptionStatus }),
    ...(changes.trialEndsAt !== undefined && { trial_ends_at: changes.trialEndsAt }),
  };
  if (Object.keys(set).length === 0) {
    return db.selectFrom('agencies').selectAll().where('id', '=', id).executeTakeFirst();
  }
  return db.updateTable('agencies').set(set).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function findAgency(db: Kysely<Database>, id: string) {
  return db.selectFrom('agencies').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every agency, newest first: the platform team's overview (tripctl agency list). */
export async function listAgencies(db: Kysely<Database>) {
  return db.selectFrom('agencies').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/**
 * The newest agency with an owner whose e-mail address is at `domain`, with that owner: how
 * `tripctl demo prepare` finds the demo agency an earlier run made.
 */
export async function findNewestAgencyOwnedAt(db: Kysely<Database>, domain: string) {
  return db
    .selectFrom('agencies')
    .innerJoin('users', 'users.agency_id', 'agencies.id')
    .selectAll('agencies')
    .select(['users.id as owner_id', 'users.email as owner_email'])
    .where('users.role', '=', 'owner')
    .where('users.email', 'like', `%@${domain}`)
    .orderBy('agencies.created_at', 'desc')
    .orderBy('agencies.id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** The ids of an agency's trips (templates apart), payments and contacts, oldest first. */
export async function agencyObjectIds(db: Kysely<Database>, agencyId: string) {
  const [trips, payments, contacts] = await Promise.all([
    db
      .selectFrom('trips')
      .select(['id', 'title', 'is_template'])
      .where('agency_id', '=', agencyId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    db
      .selectFrom('payments')
      .select('id')
      .where('agency_id', '=', agencyId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    db
      .selectFrom('contacts')
      .select('id')
      .where('agency_id', '=', agencyId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
  ]);
  return {
    trips: trips.filter((t) => !t.is_template),
    templateIds: trips.filter((t) => t.is_template).map((t) => t.id),
    paymentIds: payments.map((p) => p.id),
    contactIds: contacts.map((c) => c.id),
  };
}
