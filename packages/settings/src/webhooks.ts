import type { Kysely } from 'kysely';
import type { Database, WebhookRow } from '@trips/db';
import { listWebhookSecretTimes, rotateWebhookSecretIn } from '@trips/db/webhook-secrets';
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
import { checkDescription, checkEventTypes, checkWebhookUrl } from './validate.ts';

export const DEFAULT_OVERLAP_MS = 24 * 3600_000;
export const MAX_OVERLAP_MS = 7 * 24 * 3600_000;

/** What an owner sees of a webhook; its secrets only as when made and until when they sign. */
export function webhookView(w: WebhookRow) {
  return {
    id: w.id,
    agency_id: w.agency_id,
    url: w.url,
    events: w.event_types,
    description: w.description,
    state: webhookState(w),
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

/** The webhook, locked for the transaction, after the actor is checked against its agency. */
const lockWebhook = (trx: Trx, actor: Actor, id: string) => webhookFor(trx, actor, id, true);

/** The webhook as it is now, after the actor is checked against its agency; nothing locked. */
export const findWebhook = (db: Kysely<Database>, actor: Actor, id: string) =>
  webhookFor(db, actor, id, false);

async function webhookFor(on: Kysely<Database>, actor: Actor, id: string, forUpdate: boolean) {
  const webhook = await (forUpdate ? lockWebhookRow(on, id) : findWebhookRow(on, id));
  if (!webhook) throw notFound(`no webhook ${id}.`);
  const who = await authorize(on, actor, webhook.agency_id);
  return { webhook, who };
}

/** Webhooks (D7): created, listed, changed, switched off and on, their secrets rotated. */
export function webhookActions({ db, options, inTransaction }: SettingsContext) {
  const urlRules = {
    allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    nameDevelopmentSetting: options.nameDevelopmentSettings ?? false,
  };
  return {
    /** Creates a webhook; its first `secret` is in the answer only. */
    async createWebhook(
      actor: Actor,
      input: { agencyId: string; url: string; eventTypes: string[]; description?: string | null },
    ) {
      const url = checkWebhookUrl(input.url, urlRules);
      const eventTypes = checkEventTypes(input.eventTypes);
      const description = checkDescription(input.description);
      return inTransaction(async (trx) => {
        await requireAgency(trx, input.agencyId);
        const who = await authorize(trx, actor, input.agencyId);
        const { webhook, secret } = await insertWebhookWithSecret(trx, {
          agencyId: input.agencyId,
          url,
          eventTypes,
          description,
        });
        await audit(trx, who, input.agencyId, 'webhook.created', 'webhook', webhook.id, {
          url,
          event_types: webhook.event_types,
        });
        return { webhook: webhookView(webhook), secret };
      });
    },

    async listWebhooks(actor: Actor, agencyId: string): Promise<WebhookView[]> {
      await requireAgency(db, agencyId);
      await authorize(db, actor, agencyId);
      return (await listWebhooks(db, agencyId)).map(webhookView);
    },

    /** One webhook with its signing secrets' times (two while a rotation overlaps). */
    async getWebhook(actor: Actor, id: string) {
      const { webhook } = await findWebhook(db, actor, id);
      const secrets = await listWebhookSecretTimes(db, id);
      return {
        ...webhookView(webhook),
        secrets: secrets.filter((s) => s.active).map(({ id: _id, active: _a, ...s }) => s),
      };
    },

    async updateWebhook(
      actor: Actor,
      id: string,
      changes: { url?: string; eventTypes?: string[]; description?: string | null },
    ) {
      const url = changes.url === undefined ? undefined : checkWebhookUrl(changes.url, urlRules);
      const eventTypes = changes.eventTypes === undefined ? undefined : checkEventTypes(changes.eventTypes);
      const description =
        changes.description === undefined ? undefined : checkDescription(changes.description);
      if (url === undefined && eventTypes === undefined && description === undefined) {
        throw invalid('nothing to change: give a URL, event types or a description.');
      }
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const updated = (await updateWebhookConfig(trx, id, { url, eventTypes, description }))!;
        const details: Record<string, unknown> = {};
        if (url !== undefined && url !== webhook.url) details.url = { from: webhook.url, to: updated.url };
        if (eventTypes !== undefined && eventTypes.join() !== webhook.event_types.join()) {
          details.event_types = { from: webhook.event_types, to: updated.event_types };
        }
        if (description !== undefined && description !== webhook.description)
          details.description_changed = true;
        if (Object.keys(details).length > 0) {
          await audit(trx, who, webhook.agency_id, 'webhook.updated', 'webhook', id, details);
        }
        return webhookView(updated);
      });
    },

    /** Switches a webhook off (pending retries dropped) or back on (a fresh failure streak). */
    async setWebhookEnabled(actor: Actor, id: string, enabled: boolean) {
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const updated = await setWebhookEnabled(trx, id, enabled);
        // Already so: nothing changed (an active webhook keeps its streak), nothing is audited.
        if (!updated) return webhookView(webhook);
        const action = enabled ? 'webhook.enabled' : 'webhook.disabled';
        await audit(trx, who, webhook.agency_id, action, 'webhook', id, {
          previous_state: webhookState(webhook),
        });
        return webhookView(updated);
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
        return { webhook_id: id, secret, previous_secrets_expire_at: previousExpireAt };
      });
    },
  };
}
