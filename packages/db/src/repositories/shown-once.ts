import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

// A new key or secret between the post that made it and the one page that shows it (migration
// 0019): sealed, tied to the session, taken (deleted) by the first read.

/** How long a sealed value waits for its page; an owner's browser follows the redirect at once. */
const WAIT = '10 minutes';

export async function insertShownOnce(
  db: Kysely<Database>,
  row: { id: string; sessionTokenHash: string; about: unknown; sealed: string },
): Promise<void> {
  // Ones never fetched (a browser closed before the redirect) go now rather than waiting for
  // their session to end.
  await db
    .deleteFrom('shown_once')
    .where('created_at', '<', sql<Date>`now() - ${WAIT}::interval`)
    .execute();
  await db
    .insertInto('shown_once')
    .values({
      id: row.id,
      session_token_hash: row.sessionTokenHash,
      about: JSON.stringify(row.about),
      sealed: row.sealed,
    })
    .execute();
}

/** The sealed value of this session, deleted as it is read: a second read finds nothing. */
export async function takeShownOnce(
  db: Kysely<Database>,
  id: string,
  sessionTokenHash: string,
): Promise<{ about: unknown; sealed: string } | undefined> {
  return db
    .deleteFrom('shown_once')
    .where('id', '=', id)
    .where('session_token_hash', '=', sessionTokenHash)
    .where('created_at', '>=', sql<Date>`now() - ${WAIT}::interval`)
    .returning(['about', 'sealed'])
    .executeTakeFirst();
}
