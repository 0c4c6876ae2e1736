import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database, WebhookAttemptRow } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

// The dispatcher's hot statements are constant texts, prepared once per connection (fast-paths/):
// neither kysely nor Postgres builds them again on every call.

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
  /** The Service-Signature sent (migration 0018). */
  requestSignature?: string | null;
  /** The body sent, only for an event in no record (a test event). */
  requestBody?: string | null;
  /** The answer's headers as `name: value` lines, at most 1 KiB. */
  responseHeaders?: string | null;
  /** Node's error code of a failure without an answer. */
  errorDetail?: string | null;
  /** When the delivery is due again, as scheduled; null or absent: it is not (delivered, given up). */
  nextAttemptAt?: Date | null;
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
      column((a) => a.requestSignature ?? null),
      column((a) => a.requestBody ?? null),
      column((a) => a.responseHeaders ?? null),
      column((a) => a.errorDetail ?? null),
      column((a) => a.nextAttemptAt ?? null),
    ]),
  );
}

const RECORD_ATTEMPTS = `/* prepared: record_attempts */
    WITH batch AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::int[],
                           $7::int[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                           $13::text[], $14::text[], $15::timestamptz[])
        WITH ORDINALITY AS b(webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
                             status_code, error, response_body, last_error, request_signature,
                             request_body, response_headers, error_detail, next_attempt_at, ord)
    ),
    inserted AS (
      INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
                                    status_code, error, response_body, succeeded, request_signature,
                                    request_body, response_headers, error_detail, next_attempt_at)
      SELECT webhook_id, event_id, event_type, attempt, attempted_at, duration_ms,
             status_code, error, response_body, error IS NULL, request_signature,
             request_body, response_headers, error_detail, next_attempt_at
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

/** An attempt as the delivery log lists it: with what became of its delivery afterwards. */
export type ListedAttempt = WebhookAttemptRow & {
  /** A later attempt of the same event to the same webhook was made. */
  followed: boolean;
};

/**
 * A page of a webhook's attempts, newest first: those before the attempt `before` (its id), all
 * or the failed ones only. Each says whether its delivery was attempted again, so the log tells the
 * next attempt (`next_attempt_at`) only of the latest.
 */
export async function listWebhookAttempts(
  db: Db,
  webhookId: string,
  options: { limit?: number; failedOnly?: boolean; before?: number } = {},
): Promise<ListedAttempt[]> {
  let query = db
    .selectFrom('webhook_attempts as a')
    .selectAll('a')
    .select((eb) =>
      eb
        .exists(
          eb
            .selectFrom('webhook_attempts as later')
            .select(sql`1`.as('one'))
            .whereRef('later.event_id', '=', 'a.event_id')
            .whereRef('later.webhook_id', '=', 'a.webhook_id')
            .whereRef('later.id', '>', 'a.id'),
        )
        .as('followed'),
    )
    .where('a.webhook_id', '=', webhookId);
  if (options.failedOnly) query = query.where('a.succeeded', '=', false);
  if (options.before !== undefined) {
    const before = options.before;
    // Keyset paging on the log's order (time, then id), from the attempt the last page ended at.
    query = query.where((eb) =>
      eb(
        eb.refTuple('a.attempted_at', 'a.id'),
        '<',
        eb
          .selectFrom('webhook_attempts as b')
          .select(['b.attempted_at', 'b.id'])
          .where('b.id', '=', before)
          .where('b.webhook_id', '=', webhookId)
          .$asTuple('attempted_at', 'id'),
      ),
    );
  }
  return query
    .orderBy('a.attempted_at', 'desc')
    .orderBy('a.id', 'desc')
    .limit(options.limit ?? 50)
    .execute() as Promise<ListedAttempt[]>;
}

/** One attempt of the webhook, or undefined (another webhook's attempt is not this one's). */
export async function findWebhookAttempt(
  db: Db,
  webhookId: string,
  attemptId: number,
): Promise<WebhookAttemptRow | undefined> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('id', '=', attemptId)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
}

/** Per webhook, attempts and failures in the last `hours` hours (the overview's success rate). */
export async function attemptCountsSince(
  db: Db,
  webhookIds: readonly string[],
  since: Date,
): Promise<Map<string, { attempts: number; failures: number }>> {
  if (webhookIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_attempts')
    .select((eb) => [
      'webhook_id',
      eb.fn.countAll<string>().as('attempts'),
      sql<string>`count(*) FILTER (WHERE NOT succeeded)`.as('failures'),
    ])
    .where('webhook_id', 'in', webhookIds)
    .where('attempted_at', '>=', since)
    .groupBy('webhook_id')
    .execute();
  return new Map(
    rows.map((r) => [r.webhook_id, { attempts: Number(r.attempts), failures: Number(r.failures) }]),
  );
}

/**
 * A webhook's attempts and failures per period (hour or day, in UTC) from `since`, oldest first;
 * periods without attempts are left out.
 */
export async function attemptHistogram(
  db: Db,
  webhookId: string,
  unit: 'hour' | 'day',
  since: Date,
): Promise<{ period: Date; attempts: number; failures: number }[]> {
  const rows = await sql<{ period: Date; attempts: string; failures: string }>`
    SELECT date_trunc(${unit}, attempted_at, 'UTC') AS period, count(*) AS attempts,
           count(*) FILTER (WHERE NOT succeeded) AS failures
      FROM webhook_attempts
     WHERE webhook_id = ${webhookId} AND attempted_at >= ${since}
     GROUP BY 1 ORDER BY 1`.execute(db);
  return rows.rows.map((r) => ({
    period: r.period,
    attempts: Number(r.attempts),
    failures: Number(r.failures),
  }));
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
