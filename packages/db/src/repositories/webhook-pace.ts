import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database, WebhookPaceRow } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * A webhook's pace, shared by every dispatcher (migration 0021): the receiver's pause, and the
 * owner's rate limit as a virtual schedule of send times. Times cross between the dispatchers'
 * clocks and Postgres' as durations from the statement's `now()`, never as instants, so no two
 * clocks need agree.
 */

export interface Pause {
  /** From now, by the receiver's word (Retry-After) or the dispatcher's own backoff. */
  forMs: number;
  /** The answer's status: 429 or 503. */
  status: number;
  /** The Retry-After the answer gave, in ms; null when it gave none that parsed. */
  retryAfterMs: number | null;
}

/**
 * Pauses the webhook for every dispatcher: none of its deliveries is attempted before the pause
 * ends. Only ever lengthens a pause (two answers racing keep the later end); answers whether it did,
 * in which case every dispatcher is told (the row's trigger).
 */
export async function pauseWebhook(db: Db, webhookId: string, pause: Pause): Promise<boolean> {
  const result = await db.executeQuery(
    CompiledQuery.raw(PAUSE, [webhookId, pause.forMs / 1000, pause.status, pause.retryAfterMs]),
  );
  return Number(result.numAffectedRows ?? 0) > 0;
}

const PAUSE = `/* prepared: pause_webhook */
    INSERT INTO webhook_pace AS p (webhook_id, paused_until, pause_status, pause_retry_after_ms)
    VALUES ($1::text, now() + make_interval(secs => $2::float8), $3::int, $4::int)
    ON CONFLICT (webhook_id) DO UPDATE
       SET paused_until = EXCLUDED.paused_until, pause_status = EXCLUDED.pause_status,
           pause_retry_after_ms = EXCLUDED.pause_retry_after_ms
     WHERE p.paused_until IS NULL OR p.paused_until < EXCLUDED.paused_until`;

/**
 * Reserves the next `count` send times of the webhook's rate limit, `intervalMs` apart, for the
 * caller alone: answers how long from now the first of them is (0 when the schedule is idle). The
 * schedule never falls behind the present, so an idle webhook's unused past is not a burst later.
 */
export async function reserveSendTimes(
  db: Db,
  webhookId: string,
  count: number,
  intervalMs: number,
): Promise<number> {
  const result = await db.executeQuery<{ first_in_ms: number }>(
    CompiledQuery.raw(RESERVE, [webhookId, (count * intervalMs) / 1000]),
  );
  return Math.max(0, result.rows[0]!.first_in_ms);
}

const RESERVE = `/* prepared: reserve_send_times */
    INSERT INTO webhook_pace AS p (webhook_id, next_send_at)
    VALUES ($1::text, now() + make_interval(secs => $2::float8))
    ON CONFLICT (webhook_id) DO UPDATE
       SET next_send_at = greatest(p.next_send_at, now()) + make_interval(secs => $2::float8)
    RETURNING (extract(epoch FROM p.next_send_at - now()) * 1000 - $2::float8 * 1000)::float8 AS first_in_ms`;

/** The pace rows of the webhooks that have one (the settings page and tripctl show the pause). */
export async function findWebhookPaces(db: Db, webhookIds: readonly string[]): Promise<WebhookPaceRow[]> {
  if (webhookIds.length === 0) return [];
  return db.selectFrom('webhook_pace').selectAll().where('webhook_id', 'in', webhookIds).execute();
}
