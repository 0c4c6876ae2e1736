import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';

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
    INSERT INTO webhook_pace AS p (webhook_id, paused_until, paused_at, pause_status, pause_retry_after_ms)
    VALUES ($1::text, now() + make_interval(secs => $2::float8), now(), $3::int, $4::int)
    ON CONFLICT (webhook_id) DO UPDATE
       SET paused_until = EXCLUDED.paused_until, paused_at = EXCLUDED.paused_at,
           pause_status = EXCLUDED.pause_status, pause_retry_after_ms = EXCLUDED.pause_retry_after_ms
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

/** A webhook paused now, as owners are shown it (the settings page and tripctl). */
export interface WebhookPause {
  webhook_id: string;
  paused_until: Date;
  /** The answer's status: 429 or 503. */
  status: number;
  /** The Retry-After that answer gave, in ms; null: none that parsed, and the dispatcher chose the pause. */
  retry_after_ms: number | null;
  /** When the pause began: a pause the dispatcher chose lasts from then to `paused_until`. */
  paused_at: Date;
}

/** The pauses of those of the webhooks that are paused now (by Postgres' clock, as they were set). */
export async function findWebhookPauses(db: Db, webhookIds: readonly string[]): Promise<WebhookPause[]> {
  if (webhookIds.length === 0) return [];
  const result = await db.executeQuery<WebhookPause>(CompiledQuery.raw(PAUSES, [webhookIds]));
  return result.rows;
}

const PAUSES = `
    SELECT p.webhook_id, p.paused_until, p.paused_at, p.pause_status AS status,
           p.pause_retry_after_ms AS retry_after_ms
      FROM webhook_pace p
     WHERE p.webhook_id = ANY($1::text[]) AND p.paused_until > now()
     ORDER BY p.webhook_id`;
