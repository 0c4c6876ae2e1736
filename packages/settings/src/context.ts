import type { Kysely, Transaction } from 'kysely';
import type { Database } from '@trips/db';

export interface SettingsOptions {
  db: Kysely<Database>;
  /**
   * RabbitMQ (AMQP_URL: one URL, or a cluster's nodes, tried in turn), for test events and
   * redelivery; without it those two are `unavailable`.
   */
  amqpUrls?: readonly string[];
  /** The dispatcher's AMQP_PREFIX, so the deliveries queue name matches its own. */
  amqpPrefix?: string;
  /** EVENT_RETENTION: how far back a redelivery may reach (default 30 days). */
  eventRetentionMs?: number;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS, for development and tests only (D7). */
  allowPrivateNetworks?: boolean;
  /**
   * Outside production (NODE_ENV), a refused private URL's message names the setting that allows
   * it, for a developer trying a local receiver; in production it is not a hint to give owners.
   */
  nameDevelopmentSettings?: boolean;
  /**
   * How long RabbitMQ may take to accept the connection, and to confirm each batch of a test event
   * or redelivery, before the owner gets `unavailable` (default @trips/broker's PUBLISH_TIMEOUT_MS):
   * a broker under a resource alarm blocks publishers without a word.
   */
  brokerTimeoutMs?: number;
}

export type Trx = Transaction<Database>;

/**
 * What the areas of the settings module (keys, webhooks, their deliveries, people) share: made
 * once, when createSettings is. Authorization (access.ts) and the audit writer (audit.ts) hold no
 * state, so each area imports them.
 */
export interface SettingsContext {
  db: Kysely<Database>;
  options: SettingsOptions;
  /** One transaction per change: it is checked, made and audited together, or not at all. */
  inTransaction: <T>(work: (trx: Trx) => Promise<T>) => Promise<T>;
}

export function settingsContext(options: SettingsOptions): SettingsContext {
  const { db } = options;
  const inTransaction = <T>(work: (trx: Trx) => Promise<T>) => db.transaction().execute(work);
  return { db, options, inTransaction };
}
