import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database, WebhookRow } from '../schema.ts';
import { generateWebhookSecret } from './webhook-secrets.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** What an owner sees of a webhook's health (docs/webhooks.md). */
export type WebhookState = 'active' | 'failing' | 'switched_off' | 'disabled';

export function webhookState(
  w: Pick<WebhookRow, 'disabled_at' | 'disabled_reason' | 'failing_since'>,
): WebhookState {
  if (w.disabled_at) return w.disabled_reason === 'failing' ? 'switched_off' : 'disabled';
  return w.failing_since ? 'failing' : 'active';
}

// ---- Configuration (owners through the settings page and tripctl) ----

interface NewWebhook {
  agencyId: string;
  url: string;
  eventTypes: string[];
  description?: string | null;
  /** The owner's rate limit, deliveries a second (1–1000); null or absent: none. */
  rateLimit?: number | null;
}

interface CreatedWebhook {
  webhook: WebhookRow;
  /** The only time the secret is handed out (D7). */
  secret: string;
}

/** Creates a webhook with its first secret. Callers validate the URL and types first. */
export async function createWebhook(db: Kysely<Database>, input: NewWebhook): Promise<CreatedWebhook> {
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

/** The ids of the webhooks, of any agency, that are on and point at this URL. */
export async function activeWebhookIdsAt(db: Db, url: string): Promise<string[]> {
  const rows = await db
    .selectFrom('webhooks')
    .select('id')
    .where('url', '=', url)
    .where('disabled_at', 'is', null)
    .execute();
  return rows.map((r) => r.id);
}

/** A webhook locked for the transaction (FOR UPDATE), for a change that reads it first. */
export async function lockWebhook(trx: Db, id: string): Promise<WebhookRow | undefined> {
  return trx.selectFrom('webhooks').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
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

/**
 * Creates a webhook with its first secret inside the caller's transaction (the settings module
 * writes its audit row in the same one). Callers validate the URL and types first.
 */
export async function insertWebhookWithSecret(
  trx: Transaction<Database>,
  input: NewWebhook,
): Promise<CreatedWebhook> {
  const secret = generateWebhookSecret();
  const webhook = await trx
    .insertInto('webhooks')
    .values({
      agency_id: input.agencyId,
      url: input.url,
      event_types: [...new Set(input.eventTypes)],
      description: input.description ?? null,
      rate_limit: input.rateLimit ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx.insertInto('webhook_secrets').values({ webhook_id: webhook.id, secret }).execute();
  return { webhook, secret };
}

/**
 * Changes the URL, the event types, the description or the rate limit (only those given; a null
 * rate limit removes it); undefined when there is no such webhook.
 */
export async function updateWebhookConfig(
  db: Db,
  id: string,
  changes: { url?: string; eventTypes?: string[]; description?: string | null; rateLimit?: number | null },
): Promise<WebhookRow | undefined> {
  const set = {
    ...(changes.url !== undefined && { url: changes.url }),
    ...(changes.eventTypes !== undefined && { event_types: [...new Set(changes.eventTypes)] }),
    ...(changes.description !== undefined && { description: changes.description }),
    ...(changes.rateLimit !== undefined && { rate_limit: changes.rateLimit }),
  };
  if (Object.keys(set).length === 0) return findWebhook(db, id);
  return db.updateTable('webhooks').set(set).where('id', '=', id).returningAll().executeTakeFirst();
}

// ---- Delivery targets: a webhook with the secrets that sign for it (services/dispatcher) ----

export interface DeliveryTarget {
  id: string;
  agency_id: string;
  url: string;
  event_types: string[];
  disabled_at: Date | null;
  epoch: number;
  /** The secrets that sign now, newest first: two while a rotation overlaps (D7). */
  secrets: string[];
  /**
   * The ed25519 private keys that sign now, newest first, sealed (webhook-signing-keys.ts opens
   * them); none unless the owner switched ed25519 on (D11).
   */
  signing_keys: string[];
  /** The owner's rate limit, deliveries a second; null: none. */
  rate_limit: number | null;
}

/**
 * A delivery target as the reads below answer it: with, for each of its secrets in the same order,
 * the milliseconds from the read until it stops signing (null: until a rotation ends it). A reader
 * that keeps the target (the dispatcher's cache) ends each secret on its own clock, measured from
 * when it read, so an overlap ends on time with no clock shared with Postgres.
 */
export interface DeliveryTargetRead extends DeliveryTarget {
  secrets_expire_in_ms: (number | null)[];
  /** As `secrets_expire_in_ms`, for `signing_keys`. */
  signing_keys_expire_in_ms: (number | null)[];
  /** How long the receiver's pause lasts from the read (webhook-pace.ts); null: not paused. */
  paused_for_ms: number | null;
}

/** A webhook as an attempt needs it, with its secrets signing now. */
export async function findDeliveryTarget(db: Db, webhookId: string): Promise<DeliveryTargetRead | undefined> {
  return (await findDeliveryTargets(db, [webhookId]))[0];
}

/** findDeliveryTarget for several webhooks in one query (ordered by id; missing ones left out). */
export async function findDeliveryTargets(
  db: Db,
  webhookIds: readonly string[],
): Promise<DeliveryTargetRead[]> {
  return deliveryTargets(db, TARGETS_BY_ID, webhookIds);
}

/**
 * The active webhooks of several agencies as attempts need them, ordered by id: one query for many
 * fan-outs at once (the dispatcher batches them). An agency's rows whose `event_types` hold a type
 * are the webhooks that event goes to (spec 6.2).
 */
export async function activeDeliveryTargets(
  db: Db,
  agencyIds: readonly string[],
): Promise<DeliveryTargetRead[]> {
  return deliveryTargets(db, ACTIVE_TARGETS_OF_AGENCIES, agencyIds);
}

// The dispatcher's hot statements are constant texts, prepared once per connection (fast-paths/):
// neither kysely nor Postgres builds them again on every call.
const deliveryTargetsWhere = (where: string) => `/* prepared: delivery_targets */
    SELECT w.id, w.agency_id, w.url, w.event_types, w.disabled_at, w.epoch, w.rate_limit,
           (SELECT (extract(epoch FROM p.paused_until - now()) * 1000)::float8 FROM webhook_pace p
             WHERE p.webhook_id = w.id AND p.paused_until > now()) AS paused_for_ms,
           coalesce(array_agg(s.secret ORDER BY s.created_at DESC, s.id) FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets,
           coalesce(array_agg((extract(epoch FROM s.expires_at - now()) * 1000)::float8 ORDER BY s.created_at DESC, s.id)
                      FILTER (WHERE s.id IS NOT NULL), '{}') AS secrets_expire_in_ms,
           k.signing_keys, k.signing_keys_expire_in_ms
      FROM webhooks w
      LEFT JOIN webhook_secrets s ON s.webhook_id = w.id AND (s.expires_at IS NULL OR s.expires_at > now())
      CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(k.private_key_sealed ORDER BY k.created_at DESC, k.id DESC), '{}') AS signing_keys,
               coalesce(array_agg((extract(epoch FROM k.expires_at - now()) * 1000)::float8
                                  ORDER BY k.created_at DESC, k.id DESC), '{}') AS signing_keys_expire_in_ms
          FROM webhook_signing_keys k
         WHERE k.webhook_id = w.id AND (k.expires_at IS NULL OR k.expires_at > now())) k
     WHERE ${where}
     GROUP BY w.id, k.signing_keys, k.signing_keys_expire_in_ms
     ORDER BY w.id`;
const TARGETS_BY_ID = deliveryTargetsWhere('w.id = ANY($1::text[])');
const ACTIVE_TARGETS_OF_AGENCIES = deliveryTargetsWhere(
  'w.agency_id = ANY($1::text[]) AND w.disabled_at IS NULL',
);

async function deliveryTargets(db: Db, text: string, ids: readonly string[]): Promise<DeliveryTargetRead[]> {
  return (await db.executeQuery<DeliveryTargetRead>(CompiledQuery.raw(text, [ids]))).rows;
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
