import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

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
