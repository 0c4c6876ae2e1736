import { sql, type Kysely } from 'kysely';
import type { Database, UserRole } from '../schema.ts';

/** A signed-in user as the settings page sees them: who, of which agency, with which form token. */
export interface SessionUser {
  userId: string;
  agencyId: string;
  agencyName: string;
  email: string;
  role: UserRole;
  csrfToken: string;
  expiresAt: Date;
}

export async function insertSession(
  db: Kysely<Database>,
  session: { tokenHash: string; userId: string; csrfToken: string; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('owner_sessions')
    .values({
      token_hash: session.tokenHash,
      user_id: session.userId,
      csrf_token: session.csrfToken,
      expires_at: session.expiresAt,
    })
    .execute();
}

/** The session's user while it has not expired; undefined otherwise. */
export async function findSession(db: Kysely<Database>, tokenHash: string): Promise<SessionUser | undefined> {
  const row = await db
    .selectFrom('owner_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('agencies as a', 'a.id', 'u.agency_id')
    .select([
      'u.id as userId',
      'u.agency_id as agencyId',
      'a.name as agencyName',
      'u.email as email',
      'u.role as role',
      's.csrf_token as csrfToken',
      's.expires_at as expiresAt',
    ])
    .where('s.token_hash', '=', tokenHash)
    .where('s.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row;
}

export async function deleteSession(db: Kysely<Database>, tokenHash: string): Promise<void> {
  await db.deleteFrom('owner_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Signs a user out everywhere, e.g. when their password changes. */
export async function deleteSessionsOf(db: Kysely<Database>, userId: string): Promise<void> {
  await db.deleteFrom('owner_sessions').where('user_id', '=', userId).execute();
}

/** Removes expired sessions; returns how many. Called now and then by the API. */
export async function deleteExpiredSessions(db: Kysely<Database>): Promise<number> {
  const result = await db
    .deleteFrom('owner_sessions')
    .where('expires_at', '<=', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
