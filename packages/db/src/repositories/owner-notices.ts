import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, OwnerNoticeKind, OwnerNoticeRow } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

// ---- E-mails owed to owners (the dispatcher's switch-off writes them, its mailer sends them) ----

export interface NewOwnerNotice {
  agencyId: string;
  webhookId: string;
  kind: OwnerNoticeKind;
  recipient: string;
  subject: string;
  body: string;
}

export async function insertOwnerNotices(trx: Db, notices: NewOwnerNotice[]): Promise<void> {
  if (notices.length === 0) return;
  await trx
    .insertInto('owner_notices')
    .values(
      notices.map((n) => ({
        agency_id: n.agencyId,
        webhook_id: n.webhookId,
        kind: n.kind,
        recipient: n.recipient,
        subject: n.subject,
        body: n.body,
      })),
    )
    .execute();
}

/** A notice one mailer has claimed; `lease` tells this claim from any later one of the same row. */
export interface ClaimedNotice {
  notice: OwnerNoticeRow;
  /** The claim's claimed_until as Postgres prints it: exact to the microsecond, unlike a Date. */
  lease: string;
}

/**
 * Claims the oldest notice that is owed and due, past `afterId` (a mailer moves on within a round
 * rather than retrying one that just failed), for `leaseMs`. A notice that failed waits a little
 * longer after each failure.
 *
 * The claim is this one statement, committed at once: the caller sends with no transaction open,
 * so a hanging mail server holds no transaction id (which would freeze list sync, sync.ts), no
 * lock and no pooled connection. SKIP LOCKED lets mailers claiming at the same instant take
 * different rows instead of queueing; a committed lease keeps every other mailer off the row
 * until it ends. The lease must outlast the worst case of sending one e-mail and recording the
 * outcome: it only ends on its own when a mailer died mid-send, and then another sends the notice
 * again (the documented at-least-once).
 */
export async function claimNextNotice(
  db: Kysely<Database>,
  leaseMs: number,
  afterId = 0,
): Promise<ClaimedNotice | undefined> {
  const { rows } = await sql<OwnerNoticeRow & { lease: string }>`
    UPDATE owner_notices SET claimed_until = now() + make_interval(secs => ${leaseMs / 1000})
     WHERE id = (
       SELECT id FROM owner_notices
        WHERE sent_at IS NULL AND send_attempts < 20
          AND (send_attempts = 0 OR created_at + make_interval(secs => power(2, send_attempts)) < now())
          AND (claimed_until IS NULL OR claimed_until < now())
          AND id > ${afterId}
        ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *, claimed_until::text AS lease`.execute(db);
  const row = rows[0];
  if (!row) return undefined;
  const { lease, ...notice } = row;
  return { notice, lease };
}

/**
 * The mail server accepted the notice: it is never sent again. Whoever holds the row's lease by
 * now, the e-mail has gone out, so this records it regardless.
 */
export async function markNoticeSent(db: Db, id: number): Promise<void> {
  await db
    .updateTable('owner_notices')
    .set({ sent_at: sql<Date>`now()`, claimed_until: null })
    .where('id', '=', id)
    .where('sent_at', 'is', null)
    .execute();
}

/**
 * The attempt failed: counts it and ends the claim, so the notice is owed again once its back-off
 * has passed. Only while `lease` is still the row's claim: a mailer whose lease ran out must not
 * count an attempt of, nor free the row from under, the mailer that took it over.
 */
export async function markNoticeFailed(db: Db, id: number, lease: string, error: string): Promise<void> {
  await db
    .updateTable('owner_notices')
    .set((eb) => ({
      send_attempts: eb('send_attempts', '+', 1),
      last_error: error.slice(0, 500),
      claimed_until: null,
    }))
    .where('id', '=', id)
    .where('sent_at', 'is', null)
    .where('claimed_until', '=', sql<Date>`${lease}::timestamptz`)
    .execute();
}

/** Gives a claim up without counting an attempt (the mailer is stopping), under the same rule. */
export async function releaseNotice(db: Db, id: number, lease: string): Promise<void> {
  await db
    .updateTable('owner_notices')
    .set({ claimed_until: null })
    .where('id', '=', id)
    .where('claimed_until', '=', sql<Date>`${lease}::timestamptz`)
    .execute();
}
