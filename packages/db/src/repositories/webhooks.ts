import { randomBytes } from 'node:crypto';
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database, OwnerNoticeKind, OwnerNoticeRow, WebhookAttemptRow, WebhookRow } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** D7: `whsec_` then 32 random bytes in base64url (43 characters). */
export const WEBHOOK_SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/;

export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** What an owner sees of a webhook's health (docs/webhooks.md). */
export type WebhookState = 'active' | 'failing' | 'switched_off' | 'disabled';

export function webhookState(
  w: Pick<WebhookRow, 'disabled_at' | 'disabled_reason' | 'failing_since'>,
): WebhookState {
  if (w.disabled_at) return w.disabled_reason === 'failing' ? 'switched_off' : 'disabled';
  return w.failing_since ? 'failing' : 'active';
}

// ---- Configuration (owners through the settings page and tripctl) ----

export interface CreatedWebhook {
  webhook: WebhookRow;
  /** The only time the secret is handed out (D7). */
  secret: string;
}

/** Creates a webhook with its first secret. Callers validate the URL and types first. */
export async function createWebhook(
  db: Kysely<Database>,
  input: { agencyId: string; url: string; eventTypes: string[]; description?: string | null },
): Promise<CreatedWebhook> {
  return db.transaction().execute((trx) => insertWebhookWithSecret(trx, input));
}

export async function listWebhooks(db: Db, agencyId: string): Promise<WebhookRow[]> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('agency_id', '=', agencyId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function findWebhook(db: Db, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Switches a webhook on or off by an owner's action; answers the row, or undefined when there is
 * none or it already was so (then nothing changes). Off bumps the epoch, dropping queued
 * deliveries and retries. Switching back on starts a fresh failure streak (D7), so the next
 * failure gets the whole window again; enabling one that is on keeps its streak, or enabling
 * again and again would put its switch-off off for ever.
 */
export async function setWebhookEnabled(
  db: Db,
  id: string,
  enabled: boolean,
): Promise<WebhookRow | undefined> {
  const query = db.updateTable('webhooks').where('id', '=', id);
  if (enabled) {
    return query
      .where('disabled_at', 'is not', null)
      .set({ disabled_at: null, disabled_reason: null, failing_since: null, warned_at: null })
      .returningAll()
      .executeTakeFirst();
  }
  return query
    .where('disabled_at', 'is', null)
    .set((eb) => ({ disabled_at: sql<Date>`now()`, disabled_reason: 'owner', epoch: eb('epoch', '+', 1) }))
    .returningAll()
    .executeTakeFirst();
}

// ---- Delivery (services/dispatcher) ----

export interface DeliveryTarget {
  id: string;
  agency_id: string;
  url: string;
  event_types: string[];
  disabled_at: Date | null;
  epoch: number;
  /** The secrets that sign now, newest first: two while a rotation overlaps (D7). */
  secrets: string[];
}

/** A webhook as an attempt needs it, read fresh for every attempt so a changed URL or secret applies. */
export async function findDeliveryTarget(db: Db, webhookId: string): Promise<DeliveryTarget | undefined> {
  return (await findDeliveryTargets(db, [webhookId]))[0];
}

/** findDeliveryTarget for several webhooks in one query (ordered by id; missing ones left out). */
export async function findDeliveryTargets(db: Db, webhookIds: readonly string[]): Promise<DeliveryTarget[]> {
  return deliveryTargets(db, TARGETS_BY_ID, webhookIds);
}

/**
 * The active webhooks of several agencies as attempts need them, ordered by id: one query for many
 * fan-outs at once (the dispatcher batches them). An agency's rows whose `event_types` hold a type
 * are the webhooks that event goes to (spec 6.2).
 */
export async function activeDeliveryTargets(db: Db, agencyIds: readonly string[]): Promise<DeliveryTarget[]> {
  return deliveryTargets(db, ACTIVE_TARGETS_OF_AGENCIES, agencyIds);
}

// The dispatcher's hot statements are constant texts, prepared once per connection (client-queries.ts):
// neither kysely nor Postgres builds them again on every call.
const deliveryTargetsWhere = (where: string) => `/* prepared: delivery_targets */
    SELECT w.id, w.agency_id, w.url, w.event_types, w.disabled_at, w.epoch,
           coalesce(array_agg(s.secret ORDER BY s.created_at DESC, s.id) FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets
      FROM webhooks w
      LEFT JOIN webhook_secrets s ON s.webhook_id = w.id AND (s.expires_at IS NULL OR s.expires_at > now())
     WHERE ${where}
     GROUP BY w.id
     ORDER BY w.id`;
const TARGETS_BY_ID = deliveryTargetsWhere('w.id = ANY($1::text[])');
const ACTIVE_TARGETS_OF_AGENCIES = deliveryTargetsWhere(
  'w.agency_id = ANY($1::text[]) AND w.disabled_at IS NULL',
);

async function deliveryTargets(db: Db, text: string, ids: readonly string[]): Promise<DeliveryTarget[]> {
  return (await db.executeQuery<DeliveryTarget>(CompiledQuery.raw(text, [ids]))).rows;
}

export interface NewAttempt {
  webhookId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  /** The failure class; null for a 2xx. */
  error: string | null;
  responseBody: string | null;
}

/**
 * Records one attempt and moves the webhook's failure streak, in one statement. A 2xx ends the
 * streak (D7: any 2xx resets it); a failure starts one unless it runs already. A success touches the
 * row only when there is something to change, or last_success_at is over a second old, so a busy
 * healthy endpoint does not serialize its deliveries on one row lock.
 */
export async function recordAttempt(db: Db, a: NewAttempt): Promise<void> {
  await recordAttempts(db, [a]);
}

/**
 * Records several attempts in one statement (the dispatcher batches the attempts that finish
 * together, one round trip and one commit for all). Each webhook's streak moves as if its
 * attempts were recorded one after another in the given order, by recordAttempt's rules: the last
 * 2xx ends the streak, and the failures after it start a new one (or, with no 2xx among them,
 * continue the running one); last_error and last_failure_at come from the last failure. The one
 * approximation is last_success_at, which one at a time moves only when over a second old (the
 * rule above): here it becomes the latest 2xx's time whenever the row changes anyway, so it may be
 * up to a second newer. With one attempt this is exactly recordAttempt's single-row statement.
 */
export async function recordAttempts(db: Db, attempts: readonly NewAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const column = <T>(value: (a: NewAttempt) => T) => attempts.map(value);
  await db.executeQuery(
    CompiledQuery.raw(RECORD_ATTEMPTS, [
      column((a) => a.webhookId),
      column((a) => a.eventId),
      column((a) => a.eventType),
      column((a) => a.attempt),
      column((a) => a.attemptedAt),
      column((a) => Math.round(a.durationMs)),
      column((a) => a.statusCode),
      column((a) => a.error),
      column((a) => a.responseBody),
      // What owners read as "last error": the class, and the status when there was an answer.
      column((a) => (a.statusCode === null ? a.error : `${a.error} (HTTP ${a.statusCode})`)),
    ]),
  );
}

const RECORD_ATTEMPTS = `/* prepared: record_attempts */
    WITH batch AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[],
                           $7::int[], $8::text[], $9::text[], $10::text[])
        WITH ORDINALITY AS b(webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
                             status_code, error, response_body, last_error, ord)
    ),
    inserted AS (
      INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
                                    status_code, error, response_body, succeeded)
      SELECT webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
             status_code, error, response_body, error IS NULL
        FROM batch ORDER BY ord
    ),
    last_ok AS (
      SELECT webhook_id, max(ord) FILTER (WHERE error IS NULL) AS ord FROM batch GROUP BY webhook_id
    ),
    -- Per webhook: whether a 2xx came and the latest 2xx time, the first failure after the last
    -- 2xx (where a new streak starts), and its last failure.
    streak AS (
      SELECT b.webhook_id,
             max(b.attempted_at) FILTER (WHERE b.error IS NULL) AS ok_at,
             k.ord IS NOT NULL AS ok,
             (array_agg(b.attempted_at ORDER BY b.ord)
                FILTER (WHERE b.error IS NOT NULL AND b.ord > coalesce(k.ord, 0)))[1] AS fail_from,
             (array_agg(b.attempted_at ORDER BY b.ord DESC) FILTER (WHERE b.error IS NOT NULL))[1] AS last_fail_at,
             (array_agg(b.last_error ORDER BY b.ord DESC) FILTER (WHERE b.error IS NOT NULL))[1] AS last_error
        FROM batch b JOIN last_ok k USING (webhook_id)
       GROUP BY b.webhook_id, k.ord
    )
    UPDATE webhooks w
       SET failing_since = CASE WHEN s.ok THEN s.fail_from ELSE coalesce(w.failing_since, s.fail_from) END,
           warned_at = CASE WHEN s.ok THEN NULL ELSE w.warned_at END,
           last_success_at = coalesce(s.ok_at, w.last_success_at),
           last_failure_at = coalesce(s.last_fail_at, w.last_failure_at),
           last_error = CASE WHEN s.last_fail_at IS NULL THEN w.last_error ELSE s.last_error END
      FROM streak s
     WHERE w.id = s.webhook_id AND w.disabled_at IS NULL
       AND (s.last_fail_at IS NOT NULL OR w.failing_since IS NOT NULL OR w.last_success_at IS NULL
            OR w.last_success_at < s.ok_at - interval '1 second')`;

export async function listWebhookAttempts(
  db: Db,
  webhookId: string,
  limit = 50,
): Promise<WebhookAttemptRow[]> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .orderBy('attempted_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Deletes attempts older than `before`, a bounded batch at a time; answers how many went. */
export async function pruneWebhookAttempts(db: Db, before: Date, batch = 10_000): Promise<number> {
  const result = await sql`
    DELETE FROM webhook_attempts WHERE id IN (
      SELECT id FROM webhook_attempts WHERE attempted_at < ${before} ORDER BY attempted_at LIMIT ${batch})`.execute(
    db,
  );
  return Number(result.numAffectedRows ?? 0);
}

// ---- The switch-off policy (spec 3.3, D7) ----

/**
 * Switches off every webhook whose failure streak is older than the window, bumping the epoch so
 * pending retries are dropped. Only the statement that flips a row returns it, so with several
 * dispatchers each switch-off (and its e-mail) happens once.
 */
export async function switchOffFailingWebhooks(
  trx: Transaction<Database>,
  windowMs: number,
): Promise<WebhookRow[]> {
  return trx
    .updateTable('webhooks')
    .set((eb) => ({ disabled_at: sql<Date>`now()`, disabled_reason: 'failing', epoch: eb('epoch', '+', 1) }))
    .where('disabled_at', 'is', null)
    .where('failing_since', '<=', sql<Date>`now() - make_interval(secs => ${windowMs / 1000})`)
    .returningAll()
    .execute();
}

/** Marks as warned every active webhook failing for longer than `afterMs` and not yet warned. */
export async function warnFailingWebhooks(
  trx: Transaction<Database>,
  afterMs: number,
): Promise<WebhookRow[]> {
  return trx
    .updateTable('webhooks')
    .set({ warned_at: sql<Date>`now()` })
    .where('disabled_at', 'is', null)
    .where('warned_at', 'is', null)
    .where('failing_since', '<=', sql<Date>`now() - make_interval(secs => ${afterMs / 1000})`)
    .returningAll()
    .execute();
}

// ---- E-mails owed to owners ----

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

// ---- The owners' settings module (packages/settings) ----

/**
 * Creates a webhook with its first secret inside the caller's transaction (the settings module
 * writes its audit row in the same one). Callers validate the URL and types first.
 */
export async function insertWebhookWithSecret(
  trx: Transaction<Database>,
  input: { agencyId: string; url: string; eventTypes: string[]; description?: string | null },
): Promise<CreatedWebhook> {
  const secret = generateWebhookSecret();
  const webhook = await trx
    .insertInto('webhooks')
    .values({
      agency_id: input.agencyId,
      url: input.url,
      event_types: [...new Set(input.eventTypes)],
      description: input.description ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx.insertInto('webhook_secrets').values({ webhook_id: webhook.id, secret }).execute();
  return { webhook, secret };
}

/** Changes the URL, the event types or the description (only those given); undefined when there is no such webhook. */
export async function updateWebhookConfig(
  db: Db,
  id: string,
  changes: { url?: string; eventTypes?: string[]; description?: string | null },
): Promise<WebhookRow | undefined> {
  const set = {
    ...(changes.url !== undefined && { url: changes.url }),
    ...(changes.eventTypes !== undefined && { event_types: [...new Set(changes.eventTypes)] }),
    ...(changes.description !== undefined && { description: changes.description }),
  };
  if (Object.keys(set).length === 0) return findWebhook(db, id);
  return db.updateTable('webhooks').set(set).where('id', '=', id).returningAll().executeTakeFirst();
}

export interface RotatedSecret {
  /** The new secret: the only time it is handed out (D7). */
  secret: string;
  /** Until when the secrets signing before the rotation still sign (D7's overlap). */
  previousExpireAt: Date;
}

/**
 * Adds a new secret and gives every secret still signing an end `overlapMs` from now (or keeps its
 * earlier end), so both sign until then (D7). The dispatcher reads the unexpired secrets at every
 * attempt, so nothing else needs telling.
 */
export async function rotateWebhookSecretIn(
  trx: Transaction<Database>,
  webhookId: string,
  overlapMs: number,
): Promise<RotatedSecret> {
  const secret = generateWebhookSecret();
  const { rows } = await sql<{ until: Date }>`
    SELECT now() + make_interval(secs => ${overlapMs / 1000}) AS until`.execute(trx);
  const until = rows[0]!.until;
  await trx
    .updateTable('webhook_secrets')
    .set({ expires_at: sql<Date>`least(coalesce(expires_at, ${until}), ${until})` })
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .execute();
  await trx.insertInto('webhook_secrets').values({ webhook_id: webhookId, secret }).execute();
  return { secret, previousExpireAt: until };
}

/** A webhook's secrets as owners may see them: when made and until when they sign, never the secret. */
export async function listWebhookSecretTimes(
  db: Db,
  webhookId: string,
): Promise<{ id: string; created_at: Date; expires_at: Date | null; active: boolean }[]> {
  const result = await sql<{ id: string; created_at: Date; expires_at: Date | null; active: boolean }>`
    SELECT id, created_at, expires_at, (expires_at IS NULL OR expires_at > now()) AS active
      FROM webhook_secrets WHERE webhook_id = ${webhookId}
     ORDER BY created_at DESC, id`.execute(db);
  return result.rows;
}

/**
 * A page of an agency's recorded events of some types since a time, in recording order (seq), for
 * redelivering them to one webhook. Keyset paging by seq: pass the last seq of a page as `afterSeq`.
 */
export async function eventsForRedelivery(
  db: Db,
  input: { agencyId: string; since: Date; types: readonly string[]; afterSeq?: number; limit?: number },
) {
  return db
    .selectFrom('events')
    .select(['seq', 'id', 'type', 'object_type', 'object_id', 'data', 'created_at'])
    .where('agency_id', '=', input.agencyId)
    .where('created_at', '>=', input.since)
    .where('type', '=', sql<string>`ANY(${[...input.types]}::text[])`)
    .where('seq', '>', input.afterSeq ?? 0)
    .orderBy('seq')
    .limit(input.limit ?? 500)
    .execute();
}

/** How many events eventsForRedelivery will answer in all, for a progress bar. */
export async function countEventsForRedelivery(
  db: Db,
  input: { agencyId: string; since: Date; types: readonly string[] },
): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('agency_id', '=', input.agencyId)
    .where('created_at', '>=', input.since)
    .where('type', '=', sql<string>`ANY(${[...input.types]}::text[])`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
