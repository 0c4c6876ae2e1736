import type { Kysely } from 'kysely';
import type { Database, UserRole } from '../schema.ts';

/** A user's columns but the password hash. */
const USER_COLUMNS = ['id', 'agency_id', 'email', 'role'] as const;

export async function createUser(
  db: Kysely<Database>,
  input: { agencyId: string; email: string; role: UserRole; passwordHash?: string | null },
) {
  return db
    .insertInto('users')
    .values({
      agency_id: input.agencyId,
      email: input.email,
      role: input.role,
      password_hash: input.passwordHash ?? null,
    })
    .returning(['id', 'agency_id', 'email', 'role', 'created_at'])
    .executeTakeFirstOrThrow();
}

export async function listOwnerEmails(db: Kysely<Database>, agencyId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('email')
    .where('agency_id', '=', agencyId)
    .where('role', '=', 'owner')
    .orderBy('email')
    .execute();
  return rows.map((r) => r.email);
}

/** A user by e-mail (any case) with their password hash, for signing in. */
export async function findUserForSignIn(db: Kysely<Database>, email: string) {
  return db
    .selectFrom('users')
    .select(['id', 'agency_id', 'email', 'role', 'password_hash'])
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
}

/** A user by id (usr_…), without the password hash. */
export async function findUserById(db: Kysely<Database>, id: string) {
  return db.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** A user by e-mail (any case), without the password hash. */
export async function findUserByEmail(db: Kysely<Database>, email: string) {
  return db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
}

/** A user by id, locked for the transaction (FOR UPDATE), without the password hash. */
export async function lockUser(trx: Kysely<Database>, id: string) {
  return trx.selectFrom('users').select(USER_COLUMNS).where('id', '=', id).forUpdate().executeTakeFirst();
}

/** Stores a user's new password hash; the caller has locked the user. */
export async function setUserPassword(
  trx: Kysely<Database>,
  id: string,
  passwordHash: string,
): Promise<void> {
  await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', id).execute();
}
