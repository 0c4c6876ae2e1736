import type { Kysely } from 'kysely';
import { standardWebhooksSecret } from '@trips/contracts/webhook-signing';
import type { Database, WebhookRow } from '@trips/db';
import { findWebhookPauses, type WebhookPause } from '@trips/db/webhook-pace';
import { listWebhookSecretTimes, rotateWebhookSecretIn } from '@trips/db/webhook-secrets';
import { listSigningKeys } from '@trips/db/webhook-signing-keys';
import {
  findWebhook as findWebhookRow,
  insertWebhookWithSecret,
  listWebhooks,
  lockWebhook as lockWebhookRow,
  setWebhookEnabled,
  updateWebhookConfig,
  webhookState,
} from '@trips/db/webhooks';
import { authorize, requireAgency, type Actor } from './access.ts';
import { audit } from './audit.ts';
import type { SettingsContext, Trx } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { describePause } from './pace-words.ts';
import { checkDescription, checkEventTypes, checkRateLimit, checkWebhookUrl } from './validate.ts';

export const DEFAULT_OVERLAP_MS = 24 * 3600_000;
export const MAX_OVERLAP_MS = 7 * 24 * 3600_000;

/**
 * What an owner sees of a webhook; its secrets only as when made and until when they sign. `pause`:
 * the receiver's pause if it is paused now (D10), which pausesOf reads.
 */
export function webhookView(w: WebhookRow, pause: WebhookPause | undefined) {
  return {
    id: w.id,
    agency_id: w.agency_id,
    url: w.url,
    events: w.event_types,
    description: w.description,
    /** The owner's limit, deliveries a second; null: none. */
    rate_limit: w.rate_limit,
    state: webhookState(w),
    /** Until when nothing is attempted, as the receiver asked; null: not paused. */
    paused: pause
      ? {
          until: pause.paused_until,
          status: pause.status,
          retry_after_ms: pause.retry_after_ms,
          reason: describePause(pause),
        }
      : null,
    failing_since: w.failing_since,
    disabled_at: w.disabled_at,
    last_success_at: w.last_success_at,
    last_failure_at: w.last_failure_at,
    last_error: w.last_error,
    created_at: w.created_at,
    updated_at: w.updated_at,
  };
}
export type WebhookView = ReturnType<typeof webhookView>;

/** The webhooks' pauses, of those paused now, by webhook id. */
async function pausesOf(on: Kysely<Database>, ids: readonly string[]) {
  return new Map((await findWebhookPauses(on, ids)).map((p) => [p.webhook_id, p]));
}

/** The view of one webhook as it is now, its pause read. */
export async function viewOf(on: Kysely<Database>, w: WebhookRow): Promise<WebhookView> {
  return webhookView(w, (await pausesOf(on, [w.id])).get(w.id));
}

/**
 * The views of webhooks as they are now, each with its pause read and its ed25519 public keys,
 * newest first (D11; none: off).
 */
async function viewsWithKeys(on: Kysely<Database>, webhooks: WebhookRow[]) {
  const ids = webhooks.map((w) => w.id);
  const [pauses, keys] = await Promise.all([pausesOf(on, ids), listSigningKeys(on, ids)]);
  return webhooks.map((w) => ({ ...webhookView(w, pauses.get(w.id)), ed25519_public_keys: keys.get(w.id)! }));
}

/** A secret just made, as it is answered once: also in the form Standard Webhooks libraries take (D11). */
const shownOnce = (secret: string) => ({ secret, standard_webhooks_secret: standardWebhooksSecret(secret) });

/** The webhook, locked for the transaction, after the actor is checked against its agency. */
export const lockWebhook = (trx: Trx, actor: Actor, id: string) => webhookFor(trx, actor, id, true);

/** The webhook as it is now, after the actor is checked against its agency; nothing locked. */
export const findWebhook = (db: Kysely<Database>, actor: Actor, id: string) =>
  webhookFor(db, actor, id, false);

async function webhookFor(on: Kysely<Database>, actor: Actor, id: string, forUpdate: boolean) {
  const webhook = await (forUpdate ? lockWebhookRow(on, id) : findWebhookRow(on, id));
  if (!webhook) throw notFound(`no webhook ${id}.`);
  const who = await authorize(on, actor, webhook.agency_id);
  return { webhook, who };
}

interface NewWebhookInput {
  agencyId: string;
  url: string;
  eventTypes: string[];
  description?: string | null;
  /** At most this many deliveries a second (1–1000); null or absent: no limit. */
  rateLimit?: number | null;
}

/** What an update may change; absent: unchanged. */
interface WebhookChanges {
  url?: string;
  eventTypes?: string[];
  description?: string | null;
  /** null removes the limit. */
  rateLimit?: number | null;
}

/** The audit's details of an update: what changed, from what to what (the description only that it did). */
function changeDetails(before: WebhookRow, after: WebhookRow): Record<string, unknown> {
  const details: Record<string, unknown> = {};
  if (after.url !== before.url) details.url = { from: before.url, to: after.url };
  if (after.event_types.join() !== before.event_types.join()) {
    details.event_types = { from: before.event_types, to: after.event_types };
  }
  if (after.description !== before.description) details.description_changed = true;
  if (after.rate_limit !== before.rate_limit) {
    details.rate_limit = { from: before.rate_limit, to: after.rate_limit };
  }
  return details;
}

/** Webhooks (D7): created, listed, changed, switched off and on, their secrets rotated. */
export function webhookActions({ db, options, inTransaction }: SettingsContext) {
  const urlRules = {
    allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    nameDevelopmentSetting: options.nameDevelopmentSettings ?? false,
  };
  return {
    /** Creates a webhook; its first `secret` is in the answer only (in both its forms). */
    async createWebhook(actor: Actor, input: NewWebhookInput) {
      const url = checkWebhookUrl(input.url, urlRules);
      const eventTypes = checkEventTypes(input.eventTypes);
      const description = checkDescription(input.description);
      const rateLimit = checkRateLimit(input.rateLimit ?? null);
      return inTransaction(async (trx) => {
        await requireAgency(trx, input.agencyId);
        const who = await authorize(trx, actor, input.agencyId);
        const { webhook, secret } = await insertWebhookWithSecret(trx, {
          agencyId: input.agencyId,
          url,
          eventTypes,
          description,
          rateLimit,
        });
        await audit(trx, who, input.agencyId, 'webhook.created', 'webhook', webhook.id, {
          url,
          event_types: webhook.event_types,
          ...(rateLimit !== null && { rate_limit: rateLimit }),
        });
        // A new webhook has had no answer yet, so no pause.
        return {
          webhook: { ...webhookView(webhook, undefined), ed25519_public_keys: [] },
          ...shownOnce(secret),
        };
      });
    },

    /** The agency's webhooks, each with its ed25519 public keys (none: off). */
    async listWebhooks(actor: Actor, agencyId: string) {
      await requireAgency(db, agencyId);
      await authorize(db, actor, agencyId);
      return viewsWithKeys(db, await listWebhooks(db, agencyId));
    },

    /**
     * One webhook with its signing secrets' times (two while a rotation overlaps) and its ed25519
     * public keys (none: off; two while a rotation of keys overlaps).
     */
    async getWebhook(actor: Actor, id: string) {
      const { webhook } = await findWebhook(db, actor, id);
      const [secrets, [view]] = await Promise.all([
        listWebhookSecretTimes(db, id),
        viewsWithKeys(db, [webhook]),
      ]);
      return {
        ...view!,
        secrets: secrets.filter((s) => s.active).map(({ id: _id, active: _a, ...s }) => s),
      };
    },

    async updateWebhook(actor: Actor, id: string, changes: WebhookChanges) {
      const url = changes.url === undefined ? undefined : checkWebhookUrl(changes.url, urlRules);
      const eventTypes = changes.eventTypes === undefined ? undefined : checkEventTypes(changes.eventTypes);
      const description =
        changes.description === undefined ? undefined : checkDescription(changes.description);
      const rateLimit = changes.rateLimit === undefined ? undefined : checkRateLimit(changes.rateLimit);
      if ([url, eventTypes, description, rateLimit].every((change) => change === undefined)) {
        throw invalid('nothing to change: give a URL, event types, a description or a rate limit.');
      }
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const updated = (await updateWebhookConfig(trx, id, { url, eventTypes, description, rateLimit }))!;
        const details = changeDetails(webhook, updated);
        if (Object.keys(details).length > 0) {
          await audit(trx, who, webhook.agency_id, 'webhook.updated', 'webhook', id, details);
        }
        return viewOf(trx, updated);
      });
    },

    /** Switches a webhook off (pending retries dropped) or back on (a fresh failure streak). */
    async setWebhookEnabled(actor: Actor, id: string, enabled: boolean) {
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const updated = await setWebhookEnabled(trx, id, enabled);
        // Already so: nothing changed (an active webhook keeps its streak), nothing is audited.
        if (!updated) return viewOf(trx, webhook);
        const action = enabled ? 'webhook.enabled' : 'webhook.disabled';
        await audit(trx, who, webhook.agency_id, action, 'webhook', id, {
          previous_state: webhookState(webhook),
        });
        return viewOf(trx, updated);
      });
    },

    /**
     * A new signing secret; the old ones keep signing for `overlapMs` (default 24 hours, at most 7
     * days; 0 ends them now), so a receiver can switch without losing a delivery.
     */
    async rotateSecret(actor: Actor, id: string, input: { overlapMs?: number } = {}) {
      const overlapMs = input.overlapMs ?? DEFAULT_OVERLAP_MS;
      if (!Number.isFinite(overlapMs) || overlapMs < 0 || overlapMs > MAX_OVERLAP_MS) {
        throw invalid('the overlap is from 0 to 7 days.');
      }
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const { secret, previousExpireAt } = await rotateWebhookSecretIn(trx, id, overlapMs);
        await audit(trx, who, webhook.agency_id, 'webhook.secret_rotated', 'webhook', id, {
          overlap_seconds: Math.round(overlapMs / 1000),
          previous_secrets_expire_at: previousExpireAt.toISOString(),
        });
        return { webhook_id: id, ...shownOnce(secret), previous_secrets_expire_at: previousExpireAt };
      });
    },
  };
}
