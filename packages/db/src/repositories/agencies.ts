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
