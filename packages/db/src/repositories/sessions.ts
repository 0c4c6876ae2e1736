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

/** A user by e-mail (any case) with their password hash, for signing in. */
export async function findUserForSignIn(db: Kysely<Database>, email: string) {
  return db
    .selectFrom('users')
    .select(['id', 'agency_id', 'email', 'role', 'password_hash'])
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
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

/**
 * Counts a sign-in attempt against each key before its password is checked (so attempts sent in
 * parallel are all counted) and returns each key's count in its current window; a key whose window
 * has passed starts a new one. A successful sign-in then forgives its attempt, so what stays counted
 * are the failures. Every key whose window has passed is removed on the way: otherwise each e-mail
 * or address ever guessed would stay for good, and the table would grow with every spray of
 * guesses. It holds one window's worth of keys at most.
 */
export async function countSignInAttempt(
  db: Kysely<Database>,
  keys: string[],
  windowMs: number,
): Promise<Map<string, { failures: number; windowStartedAt: Date }>> {
  const windowStart = sql<Date>`now() - make_interval(secs => ${windowMs / 1000})`;
  await db.deleteFrom('sign_in_failures').where('window_started_at', '<=', windowStart).execute();
  const expired = sql<boolean>`sign_in_failures.window_started_at <= ${windowStart}`;
  const rows = await db
    .insertInto('sign_in_failures')
    .values(keys.map((key) => ({ key, failures: 1, window_started_at: sql<Date>`now()` })))
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        failures: sql<number>`CASE WHEN ${expired} THEN 1 ELSE sign_in_failures.failures + 1 END`,
        window_started_at: sql<Date>`CASE WHEN ${expired} THEN now() ELSE sign_in_failures.window_started_at END`,
      }),
    )
    .returning(['key', 'failures', 'window_started_at'])
    .execute();
  return new Map(rows.map((r) => [r.key, { failures: r.failures, windowStartedAt: r.window_started_at }]));
}

/** Takes back one counted attempt of each key (it succeeded); a key at zero is removed. */
export async function forgiveSignInAttempt(db: Kysely<Database>, keys: string[]): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('key', 'in', keys).where('failures', '<=', 1).execute();
  await db
    .updateTable('sign_in_failures')
    .set({ failures: sql<number>`failures - 1` })
    .where('key', 'in', keys)
    .execute();
}

/** Forgets a key's failures, e.g. an e-mail's once its owner signed in. */
export async function forgetSignInFailures(db: Kysely<Database>, key: string): Promise<void> {
  await db.deleteFrom('sign_in_failures').where('key', '=', key).execute();
}
