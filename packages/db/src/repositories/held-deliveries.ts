import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Webhook lanes (migration 0015): deliveries waiting for their webhook to have room. A row is
 * claimed under a lease while a dispatcher attempts it, and deleted once the attempt is recorded
 * and any retry is confirmed by RabbitMQ; a dispatcher that dies leaves its claims to expire, so
 * nothing held is lost.
 */

export interface HeldDelivery {
  id: number;
  /** The DeliveryMessage as it was held. */
  delivery: unknown;
  /** When its event's change was captured, for the lag metrics; undefined when not known. */
  capturedAt: Date | undefined;
}

interface NewHeldDelivery {
  webhookId: string;
  delivery: unknown;
  /** Not to be attempted before this; absent: as soon as the webhook has room. */
  notBefore?: Date;
  /** When its event's change was captured (migration 0020); absent when not known. */
  capturedAt?: Date;
}

/** Puts deliveries in their webhooks' lanes, in one statement (the dispatcher batches them). */
export async function holdDeliveries(db: Db, rows: readonly NewHeldDelivery[]): Promise<void> {
  if (rows.length === 0) return;
  await db.executeQuery(
    CompiledQuery.raw(HOLD, [
      rows.map((r) => r.webhookId),
      rows.map((r) => JSON.stringify(r.delivery)),
      rows.map((r) => r.notBefore ?? null),
      rows.map((r) => r.capturedAt ?? null),
    ]),
  );
}

const HOLD = `/* prepared: hold_deliveries */
    INSERT INTO held_deliveries (webhook_id, delivery, not_before, captured_at)
    SELECT webhook_id, delivery::jsonb, not_before, captured_at
      FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[])
           WITH ORDINALITY AS h(webhook_id, delivery, not_before, captured_at, ord)
     ORDER BY ord`;

/**
 * Claims up to `limit` of a webhook's free and due held deliveries with ids above `afterId`, oldest
 * first, for `leaseMs`. SKIP LOCKED: two dispatchers claiming from one lane at once take different
 * rows instead of waiting. `afterId` lets a dispatcher draining a long lane go on from its last
 * claim: released rows stay in the lane's index as dead entries until a vacuum, and a claim from the
 * lane's start would step over every one of them (a backlog of 100,000 made each claim a scan).
 */
export async function claimHeldDeliveries(
  db: Db,
  webhookId: string,
  limit: number,
  leaseMs: number,
  afterId = 0,
): Promise<HeldDelivery[]> {
  const result = await db.executeQuery<{ id: string; delivery: unknown; captured_at: Date | null }>(
    CompiledQuery.raw(CLAIM, [webhookId, limit, leaseMs / 1000, afterId]),
  );
  return result.rows.map((r) => ({
    id: Number(r.id),
    delivery: r.delivery,
    capturedAt: r.captured_at ?? undefined,
  }));
}

const CLAIM = `/* prepared: claim_held_deliveries */
    UPDATE held_deliveries h SET claimed_until = now() + make_interval(secs => $3::float8)
      FROM (SELECT id FROM held_deliveries
             WHERE webhook_id = $1::text AND id > $4::bigint
               AND (claimed_until IS NULL OR claimed_until < now())
               AND (not_before IS NULL OR not_before <= now())
             ORDER BY id LIMIT $2::int FOR UPDATE SKIP LOCKED) c
     WHERE h.id = c.id
    RETURNING h.id, h.delivery, h.captured_at`;

/** Deletes held deliveries whose attempt is done with (recorded, and any retry confirmed). */
export async function releaseHeldDeliveries(db: Db, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.executeQuery(CompiledQuery.raw(RELEASE, [ids]));
}

const RELEASE = `/* prepared: release_held_deliveries */
    DELETE FROM held_deliveries WHERE id = ANY($1::bigint[])`;

/**
 * Puts claimed deliveries back in their places in their lanes, each as it is to be attempted next
 * and not before the time given: the receiver asked to wait. Each keeps its id, so it stays ahead
 * of every delivery held after it.
 */
export async function rescheduleHeldDeliveries(
  db: Db,
  rows: readonly { id: number; delivery: unknown; notBefore: Date }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.executeQuery(
    CompiledQuery.raw(RESCHEDULE, [
      rows.map((r) => r.id),
      rows.map((r) => JSON.stringify(r.delivery)),
      rows.map((r) => r.notBefore),
    ]),
  );
}

const RESCHEDULE = `/* prepared: reschedule_held_deliveries */
    UPDATE held_deliveries h SET delivery = r.delivery::jsonb, not_before = r.not_before, claimed_until = NULL
      FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS r(id, delivery, not_before)
     WHERE h.id = r.id`;

/** Gives claimed deliveries back to their lanes unattempted (the endpoint could not take them). */
export async function unclaimHeldDeliveries(db: Db, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.executeQuery(CompiledQuery.raw(UNCLAIM, [ids]));
}

const UNCLAIM = `/* prepared: unclaim_held_deliveries */
    UPDATE held_deliveries SET claimed_until = NULL WHERE id = ANY($1::bigint[])`;

/**
 * The webhooks with held deliveries. A loose index scan: one index probe per lane, however many
 * deliveries each holds, so a dead endpoint's large backlog does not make the scan expensive.
 */
export async function lanesWithHeldDeliveries(db: Db): Promise<string[]> {
  const result = await db.executeQuery<{ webhook_id: string }>(CompiledQuery.raw(LANES, []));
  return result.rows.map((r) => r.webhook_id);
}

const LANES = `/* prepared: held_delivery_lanes */
    WITH RECURSIVE lanes AS (
      (SELECT webhook_id FROM held_deliveries ORDER BY webhook_id LIMIT 1)
      UNION ALL
      SELECT (SELECT h.webhook_id FROM held_deliveries h WHERE h.webhook_id > l.webhook_id
               ORDER BY h.webhook_id LIMIT 1)
        FROM lanes l WHERE l.webhook_id IS NOT NULL
    )
    SELECT webhook_id FROM lanes WHERE webhook_id IS NOT NULL`;

/** Empties the lanes of webhooks that will never be attempted again (switched off, disabled). */
export async function dropHeldDeliveries(db: Db, webhookIds: readonly string[]): Promise<number> {
  if (webhookIds.length === 0) return 0;
  const result = await db.executeQuery(
    CompiledQuery.raw(`DELETE FROM held_deliveries WHERE webhook_id = ANY($1::text[])`, [webhookIds]),
  );
  return Number(result.numAffectedRows ?? 0);
}

/** How many deliveries are held, in all lanes (a metric). */
export async function countHeldDeliveries(db: Db): Promise<number> {
  const result = await db.executeQuery<{ n: string }>(
    CompiledQuery.raw(`SELECT count(*) AS n FROM held_deliveries`, []),
  );
  return Number(result.rows[0]!.n);
}

/**
 * How long the oldest pending deliveries have waited, in seconds by the database's clock (null
 * when none waits), for the dispatcher's metrics at scrape time. Two index lookups, never a scan:
 * - `held`: the event of the delivery that entered a lane first (the primary key's head), counted
 *   from the event's recording;
 * - `retryScheduled`: the first failure of the longest-failing webhook that is still on (the
 *   partial index webhooks_failing): its deliveries have waited for a retry at least that long.
 *   Deliveries in the delay queues are in RabbitMQ, which tells how many wait but not since when.
 */
export async function oldestPendingDeliveryAges(
  db: Db,
): Promise<{ held: number | null; retryScheduled: number | null }> {
  const result = await db.executeQuery<{ held: string | null; retry_scheduled: string | null }>(
    CompiledQuery.raw(
      `SELECT extract(epoch FROM now() - (SELECT (delivery->'event'->>'created_at')::timestamptz
                                            FROM held_deliveries ORDER BY id LIMIT 1)) AS held,
              extract(epoch FROM now() - (SELECT min(failing_since) FROM webhooks
                                           WHERE failing_since IS NOT NULL AND disabled_at IS NULL)) AS retry_scheduled`,
      [],
    ),
  );
  const row = result.rows[0]!;
  const seconds = (v: string | null) => (v === null ? null : Math.max(0, Number(v)));
  return { held: seconds(row.held), retryScheduled: seconds(row.retry_scheduled) };
}
