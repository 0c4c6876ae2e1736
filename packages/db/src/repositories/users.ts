import type { Kysely } from 'kysely';
import type { Database, UserRole } from '../schema.ts';

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
