import { eventsExchangeName, expressExchangeName, readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

/**
 * The recorder's settings, read once from the environment (decisions.md D9 plus the RECORDER_*
 * and AMQP_PREFIX settings documented in docs/events.md). Fails, naming every bad variable, before
 * any connection is opened.
 */
export function readConfig(source: Record<string, string | undefined> = process.env) {
  const env = new EnvReader(source);
  const config = {
    ...readCommonConfig(env),
    /** The broker, or every node of a cluster (AMQP_URL, comma-separated), tried in turn. */
    amqpUrls: readAmqpUrls(env),
    /** Prepended to the exchange name; tests use a random one so files do not share a broker topology. */
    amqpPrefix: env.string('AMQP_PREFIX', ''),
    /** A *.updated event waits until its object has been quiet this long (spec 6.1: 1 minute). */
    groupQuietMs: env.duration('EVENT_GROUP_QUIET', '1m'),
    /** ...and at most this long after the group's first change (spec 6.1: 5 minutes). */
    groupMaxMs: env.duration('EVENT_GROUP_MAX', '5m'),
    /** GET /events keeps this much; older day partitions are dropped (spec 4.2: 30 days). */
    retentionMs: env.duration('EVENT_RETENTION', '30d'),
    /**
     * Changes claimed per batch transaction: larger batches amortise commits; smaller ones lock less,
     * and another agency's change waits behind a bulk import for one short batch, not a long one.
     */
    batchSize: env.int('RECORDER_BATCH_SIZE', 250, { min: 1, max: 10_000 }),
    /** How often an idle recorder looks for work; bounds the commit-to-event latency when idle. */
    pollMs: env.duration('RECORDER_POLL_INTERVAL', '20ms'),
    /** A publish not confirmed by RabbitMQ within this is retried (same event id). */
    publishTimeoutMs: env.duration('RECORDER_PUBLISH_TIMEOUT', '10s'),
    /** How often partitions are created ahead and expired ones dropped. */
    maintenanceMs: env.duration('RECORDER_MAINTENANCE_INTERVAL', '1h'),
    /** /healthz and /readyz; 0 picks a free port (tests). */
    healthPort: env.int('RECORDER_HEALTH_PORT', 3001, { min: 0, max: 65_535 }),
    /** SIGTERM: the current batch finishes; past this the process exits anyway. */
    stopTimeoutMs: env.duration('RECORDER_STOP_TIMEOUT', '20s'),
  };
  env.check(
    config.groupMaxMs >= config.groupQuietMs,
    `EVENT_GROUP_MAX (${config.groupMaxMs} ms) must not be shorter than EVENT_GROUP_QUIET (${config.groupQuietMs} ms)`,
  );
  env.check(
    config.retentionMs >= config.groupMaxMs,
    'EVENT_RETENTION must not be shorter than EVENT_GROUP_MAX',
  );
  env.done();
  return Object.freeze(config);
}

export type RecorderConfig = ReturnType<typeof readConfig>;

/** The durable topic exchange events are published to; routing key = event type. */
export function eventsExchange(config: Pick<RecorderConfig, 'amqpPrefix'>): string {
  return eventsExchangeName(config.amqpPrefix);
}

/** Its twin for quiet agencies' events (express.ts); routing key = event type too. */
export function expressExchange(config: Pick<RecorderConfig, 'amqpPrefix'>): string {
  return expressExchangeName(config.amqpPrefix);
}
