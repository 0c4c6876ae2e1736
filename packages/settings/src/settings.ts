import { randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { topology } from '@trips/broker';
import { EVENT_TYPES, eventRecord, ID_PREFIXES, isEventType, TRIP_STATUSES } from '@trips/contracts';
import type { DeliveryMessage, EventSource } from '@trips/contracts';
import {
  countEventsForRedelivery,
  deleteSessionsOf,
  eventsForRedelivery,
  findAgency,
  generateApiKey,
  insertAuditEntry,
  insertApiKey,
  insertWebhookWithSecret,
  listApiKeys,
  listWebhookAttempts,
  listWebhooks,
  listWebhookSecretTimes,
  lockApiKey,
  rotateWebhookSecretIn,
  setApiKeyRevoked,
  setApiKeyScopes,
  setWebhookEnabled,
  updateWebhookConfig,
  webhookState,
  type AuditObjectType,
  type Database,
  type WebhookAttemptRow,
  type WebhookRow,
} from '@trips/db';
import { invalid, notFound, SettingsError } from './errors.ts';
import { hashPassword } from './passwords.ts';
import { publishDeliveries } from './publisher.ts';
import { checkDescription, checkEventTypes, checkScopes, checkWebhookUrl } from './validate.ts';

/**
 * Who acts: an owner of the agency (the settings page), or the platform team through tripctl,
 * audited as `platform`. A planner, or an owner of another agency, is refused with `forbidden`.
 */
export type Actor = { userId: string } | { platform: true };
export const PLATFORM: Actor = Object.freeze({ platform: true });

export interface SettingsOptions {
  db: Kysely<Database>;
  /** RabbitMQ, for test events and redelivery; without it those two are `unavailable`. */
  amqpUrl?: string;
  /** The dispatcher's AMQP_PREFIX, so the deliveries queue name matches its own. */
  amqpPrefix?: string;
  /** EVENT_RETENTION: how far back a redelivery may reach (default 30 days). */
  eventRetentionMs?: number;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS, for development and tests only (D7). */
  allowPrivateNetworks?: boolean;
  /**
   * How long RabbitMQ may take to accept the connection, and to confirm each batch of a test event
   * or redelivery, before the owner gets `unavailable` (default 10 s): a broker under a resource
   * alarm blocks publishers without a word.
   */
  brokerTimeoutMs?: number;
}

export const DEFAULT_OVERLAP_MS = 24 * 3600_000;
export const MAX_OVERLAP_MS = 7 * 24 * 3600_000;
const DEFAULT_RETENTION_MS = 30 * 24 * 3600_000;
const REDELIVERY_PAGE = 500;
const DEFAULT_BROKER_TIMEOUT_MS = 10_000;

export interface ApiKeyView {
  id: string;
  name: string | null;
  prefix: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

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

export interface RedeliveryProgress {
  done: number;
  total: number;
}

type Trx = Transaction<Database>;
interface Who {
  actorUserId: string | null;
  actor: string;
}

function keyView(k: ApiKeyView): ApiKeyView {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.created_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
  };
}

/**
 * The owner-only management module (issue 5): every change checked, validated and audited in one
 * transaction. Test events and redelivery change nothing in the database and run in none (see
 * sendTestEvent): they are audited once RabbitMQ has confirmed them.
 */
export function createSettings(options: SettingsOptions) {
  const { db } = options;
  const retentionMs = options.eventRetentionMs ?? DEFAULT_RETENTION_MS;
  const deliveriesQueue = topology(options.amqpPrefix ?? '', []).deliveriesQueue;

  /** Refuses anyone but an owner of the agency (or the platform team). */
  async function authorize(trx: Kysely<Database>, actor: Actor, agencyId: string): Promise<Who> {
    if ('platform' in actor && actor.platform === true) return { actorUserId: null, actor: 'platform' };
    const userId = (actor as { userId: string }).userId;
    const user = await trx
      .selectFrom('users')
      .select(['id', 'agency_id', 'email', 'role'])
      .where('id', '=', userId)
      .executeTakeFirst();
    // Another agency's object is indistinguishable from a missing one (D1), whatever the role: a
    // planner told 'owners only' there would learn that the id exists.
    if (!user || user.agency_id !== agencyId) throw notFound('no such object in your agency.');
    if (user.role !== 'owner') {
      throw new SettingsError('forbidden', 'only an owner of the agency manages its API keys and webhooks.');
    }
    return { actorUserId: user.id, actor: user.email };
  }

  async function audit(
    on: Kysely<Database>,
    who: Who,
    agencyId: string,
    action: string,
    objectType: AuditObjectType,
    objectId: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await insertAuditEntry(on, { ...who, agencyId, action, objectType, objectId, details });
  }

  async function requireAgency(trx: Kysely<Database>, agencyId: string) {
    const agency = await findAgency(trx, agencyId);
    if (!agency) throw notFound(`no agency ${agencyId}.`);
    return agency;
  }

  /** The webhook, locked for the transaction, after the actor is checked against its agency. */
  const lockWebhook = (trx: Trx, actor: Actor, id: string) => webhookFor(trx, actor, id, true);

  /** The webhook as it is now, after the actor is checked against its agency; nothing locked. */
  const findWebhook = (actor: Actor, id: string) => webhookFor(db, actor, id, false);

  async function webhookFor(on: Kysely<Database>, actor: Actor, id: string, forUpdate: boolean) {
    const query = on.selectFrom('webhooks').selectAll().where('id', '=', id);
    const webhook = await (forUpdate ? query.forUpdate() : query).executeTakeFirst();
    if (!webhook) throw notFound(`no webhook ${id}.`);
    const who = await authorize(on, actor, webhook.agency_id);
    return { webhook, who };
  }

  async function lockKey(trx: Kysely<Database>, actor: Actor, id: string) {
    const key = await lockApiKey(trx, id);
    if (!key) throw notFound(`no key ${id}.`);
    const who = await authorize(trx, actor, key.agency_id);
    return { key, who };
  }

  const inTransaction = <T>(work: (trx: Trx) => Promise<T>) => db.transaction().execute(work);

  /**
   * Adds and removes scopes of a key in one transaction (`remove` wins over `add`), so that no
   * concurrent change sees half of it. Each kind of change is audited as its own entry.
   */
  async function changeKeyScopes(actor: Actor, keyId: string, change: { add?: string[]; remove?: string[] }) {
    const add = change.add?.length ? checkScopes(change.add) : [];
    const remove = change.remove?.length ? checkScopes(change.remove) : [];
    return inTransaction(async (trx) => {
      const { key, who } = await lockKey(trx, actor, keyId);
      if (key.revoked_at) throw invalid(`key ${keyId} is revoked; create a new one.`);
      const scopes = [...key.scopes, ...add.filter((s) => !key.scopes.includes(s))].filter(
        (s) => !remove.includes(s),
      );
      if (scopes.length === 0) throw invalid(`a key keeps at least one scope; revoke key ${keyId} instead.`);
      const added = scopes.filter((s) => !key.scopes.includes(s));
      const removed = key.scopes.filter((s) => !scopes.includes(s));
      if (added.length + removed.length === 0) return keyView(key);
      const updated = (await setApiKeyScopes(trx, keyId, scopes))!;
      if (added.length > 0) {
        await audit(trx, who, key.agency_id, 'api_key.scopes_added', 'api_key', keyId, {
          added,
          scopes: updated.scopes,
        });
      }
      if (removed.length > 0) {
        await audit(trx, who, key.agency_id, 'api_key.scopes_removed', 'api_key', keyId, {
          removed,
          scopes: updated.scopes,
        });
      }
      return keyView(updated);
    });
  }

  function requireBroker(): string {
    if (!options.amqpUrl) throw new SettingsError('unavailable', 'no RabbitMQ configured (AMQP_URL).');
    return options.amqpUrl;
  }

  const publish = (
    amqpUrl: string,
    deliveries: AsyncIterable<DeliveryMessage[]>,
    onPublished?: (count: number) => void,
  ) =>
    publishDeliveries(amqpUrl, deliveriesQueue, deliveries, {
      timeoutMs: options.brokerTimeoutMs ?? DEFAULT_BROKER_TIMEOUT_MS,
      ...(onPublished && { onPublished }),
    });

  function requireOn(webhook: WebhookRow): void {
    if (webhook.disabled_at) {
      throw invalid(
        `webhook ${webhook.id} is switched off; switch it back on first, nothing is delivered to it now.`,
      );
    }
  }

  const delivery = (webhook: WebhookRow, source: EventSource): DeliveryMessage => ({
    webhook_id: webhook.id,
    agency_id: webhook.agency_id,
    epoch: webhook.epoch,
    event: eventRecord(source),
    attempt: 1,
    first_failed_at: null,
  });

  return {
    // ---- API keys (D2) ----

    /** Creates a key; the plaintext `key` is in the answer only, never stored or audited. */
    async createKey(actor: Actor, input: { agencyId: string; scopes: string[]; name?: string | null }) {
      const scopes = checkScopes(input.scopes);
      const name = input.name == null ? null : input.name.trim();
      if (name !== null && (name.length < 1 || name.length > 200))
        throw invalid('a key name has 1 to 200 characters.');
      return inTransaction(async (trx) => {
        await requireAgency(trx, input.agencyId);
        const who = await authorize(trx, actor, input.agencyId);
        const { key, prefix, hash } = generateApiKey();
        const row = await insertApiKey(trx, { agencyId: input.agencyId, scopes, name, prefix, hash });
        await audit(trx, who, input.agencyId, 'api_key.created', 'api_key', row.id, { prefix, scopes, name });
        return { ...keyView(row), agency_id: row.agency_id, key };
      });
    },

    async listKeys(actor: Actor, agencyId: string): Promise<ApiKeyView[]> {
      await requireAgency(db, agencyId);
      await authorize(db, actor, agencyId);
      return (await listApiKeys(db, agencyId)).map(keyView);
    },

    changeKeyScopes,

    async addKeyScopes(actor: Actor, keyId: string, scopes: string[]) {
      return changeKeyScopes(actor, keyId, { add: checkScopes(scopes) });
    },

    async removeKeyScopes(actor: Actor, keyId: string, scopes: string[]) {
      return changeKeyScopes(actor, keyId, { remove: checkScopes(scopes) });
    },

    /** Revokes at once; revoking a revoked key changes nothing and is not audited again. */
    async revokeKey(actor: Actor, keyId: string) {
      return inTransaction(async (trx) => {
        const { key, who } = await lockKey(trx, actor, keyId);
        if (key.revoked_at) return { ...keyView(key), already_revoked: true };
        const updated = await setApiKeyRevoked(trx, keyId);
        await audit(trx, who, key.agency_id, 'api_key.revoked', 'api_key', keyId, { prefix: key.prefix });
        return { ...keyView(updated), already_revoked: false };
      });
    },

    // ---- Webhooks (D7) ----

    /** Creates a webhook; its first `secret` is in the answer only. */
    async createWebhook(
      actor: Actor,
      input: { agencyId: string; url: string; eventTypes: string[]; description?: string | null },
    ) {
      const url = checkWebhookUrl(input.url, options);
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
      const webhook = await db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
      if (!webhook) throw notFound(`no webhook ${id}.`);
      await authorize(db, actor, webhook.agency_id);
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
      const url = changes.url === undefined ? undefined : checkWebhookUrl(changes.url, options);
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
        await audit(
          trx,
          who,
          webhook.agency_id,
          enabled ? 'webhook.enabled' : 'webhook.disabled',
          'webhook',
          id,
          {
            previous_state: webhookState(webhook),
          },
        );
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

    async listAttempts(
      actor: Actor,
      id: string,
      limit = 50,
    ): Promise<{ webhook: WebhookView; attempts: WebhookAttemptRow[] }> {
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalid('a limit is from 1 to 1000.');
      const webhook = await db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
      if (!webhook) throw notFound(`no webhook ${id}.`);
      await authorize(db, actor, webhook.agency_id);
      return { webhook: webhookView(webhook), attempts: await listWebhookAttempts(db, id, limit) };
    },

    /**
     * Queues a test delivery: an event of the webhook's first subscribed type with an id
     * `evt_test_…` about a placeholder object (`trp_test`, `pay_test` or `con_test`) that does not
     * exist. It is delivered, signed and logged like any other, but is not in the event record.
     */
    async sendTestEvent(actor: Actor, id: string) {
      const amqpUrl = requireBroker();
      // No transaction: none may stay open while RabbitMQ is asked (it holds a connection of the
      // pool, and locks). Published first, then audited; the audit insert failing after a
      // publish that worked is the one way a test delivery goes unaudited.
      const { webhook, who } = await findWebhook(actor, id);
      requireOn(webhook);
      const type = webhook.event_types.find(isEventType) ?? 'trip.updated';
      const objectType = EVENT_TYPES[type].object;
      const source: EventSource = {
        id: `${ID_PREFIXES.event}test_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`,
        type,
        object_type: objectType,
        object_id: `${ID_PREFIXES[objectType]}test`,
        data:
          EVENT_TYPES[type].data === 'status_change' ? { from: TRIP_STATUSES[0], to: TRIP_STATUSES[1] } : {},
        created_at: new Date(),
      };
      const message = delivery(webhook, source);
      await publish(
        amqpUrl,
        (async function* () {
          yield [message];
        })(),
      );
      await audit(db, who, webhook.agency_id, 'webhook.test_sent', 'webhook', id, {
        event_id: message.event.id,
        event_type: type,
      });
      return { webhook_id: id, event: message.event };
    },

    /**
     * Queues the agency's recorded events of the webhook's types since `since` (within
     * EVENT_RETENTION), oldest first, as fresh deliveries to this one webhook. Receivers dedupe by
     * event id (spec 6.5), so one already received does no harm.
     */
    async redeliver(
      actor: Actor,
      id: string,
      input: { since: Date; onProgress?: (progress: RedeliveryProgress) => void },
    ) {
      const since = input.since;
      if (!(since instanceof Date) || Number.isNaN(since.getTime())) throw invalid('since is not a time.');
      const now = Date.now();
      if (since.getTime() > now) throw invalid('since is in the future.');
      if (since.getTime() < now - retentionMs) {
        throw invalid(
          `since is outside the retention window: events are kept ${Math.round(retentionMs / 3600_000)} hours ` +
            `(EVENT_RETENTION), so redeliver from ${new Date(now - retentionMs).toISOString()} at the earliest.`,
        );
      }
      const amqpUrl = requireBroker();
      // As for a test event, no transaction while publishing: a long redelivery inside one also
      // held a lock on events that the recorder's daily partition change waits behind, and every
      // GET /events behind that. Each page is its own query; events only ever append, so paging
      // by seq needs no snapshot.
      const { webhook, who } = await findWebhook(actor, id);
      requireOn(webhook);
      const query = { agencyId: webhook.agency_id, since, types: webhook.event_types };
      const total = await countEventsForRedelivery(db, query);
      input.onProgress?.({ done: 0, total });
      async function* pages() {
        let afterSeq = 0;
        for (;;) {
          const rows = await eventsForRedelivery(db, { ...query, afterSeq, limit: REDELIVERY_PAGE });
          if (rows.length === 0) return;
          yield rows.map((row) => delivery(webhook, row));
          afterSeq = rows[rows.length - 1]!.seq;
          if (rows.length < REDELIVERY_PAGE) return;
        }
      }
      const count = await publish(amqpUrl, pages(), (done) =>
        input.onProgress?.({ done, total: Math.max(total, done) }),
      );
      await audit(db, who, webhook.agency_id, 'webhook.redelivered', 'webhook', id, {
        since: since.toISOString(),
        events: count,
      });
      return { webhook_id: id, since, events: count };
    },

    // ---- People ----

    /**
     * Sets a user's password (scrypt, self-describing). The user themself, an owner of their agency
     * or the platform team may; the password is never audited or returned.
     */
    async setPassword(actor: Actor, userId: string, password: string) {
      const passwordHash = await hashPassword(password);
      return inTransaction(async (trx) => {
        const user = await trx
          .selectFrom('users')
          .select(['id', 'agency_id', 'email', 'role'])
          .where('id', '=', userId)
          .forUpdate()
          .executeTakeFirst();
        if (!user) throw notFound(`no user ${userId}.`);
        const self = 'userId' in actor && actor.userId === userId;
        const who = self
          ? { actorUserId: user.id, actor: user.email }
          : await authorize(trx, actor, user.agency_id);
        await trx
          .updateTable('users')
          .set({ password_hash: passwordHash })
          .where('id', '=', userId)
          .execute();
        // A new password signs the user out of every settings-page session.
        await deleteSessionsOf(trx, userId);
        await audit(trx, who, user.agency_id, 'user.password_set', 'user', userId);
        return { id: user.id, agency_id: user.agency_id, email: user.email, role: user.role };
      });
    },

    /** A user by id (usr_…) or e-mail (any case), for tripctl's arguments. */
    async findUser(idOrEmail: string) {
      const query = db.selectFrom('users').select(['id', 'agency_id', 'email', 'role']);
      const user = idOrEmail.startsWith('usr_')
        ? await query.where('id', '=', idOrEmail).executeTakeFirst()
        : await query
            .where((eb) => eb(eb.fn('lower', ['email']), '=', idOrEmail.toLowerCase()))
            .executeTakeFirst();
      if (!user) throw notFound(`no user ${idOrEmail}.`);
      return user;
    },
  };
}

export type Settings = ReturnType<typeof createSettings>;
