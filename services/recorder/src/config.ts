import { eventsExchangeName, expressExchangeName, readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

/**
 * The recorder's settings, read once from the environment. Each variable's default, limits and
 * meaning are its row in @trips/runtime's settings table; the rules between settings are here.
 * Fails, naming every bad variable, before any connection is opened.
 */
export function readConfig(source: Record<string, string | undefined> = process.env) {
  const env = new EnvReader(source);
  const config = {
    ...readCommonConfig(env),
    amqpUrls: readAmqpUrls(env),
    /** Prepended to the exchange name; tests use a random one so files do not share a broker topology. */
    amqpPrefix: env.read('AMQP_PREFIX'),
    groupQuietMs: env.read('EVENT_GROUP_QUIET'),
    groupMaxMs: env.read('EVENT_GROUP_MAX'),
    retentionMs: env.read('EVENT_RETENTION'),
    batchSize: env.read('RECORDER_BATCH_SIZE'),
    /** How often an idle recorder looks for work; bounds the commit-to-event latency when idle. */
    pollMs: env.read('RECORDER_POLL_INTERVAL'),
    publishTimeoutMs: env.read('RECORDER_PUBLISH_TIMEOUT'),
    maintenanceMs: env.read('RECORDER_MAINTENANCE_INTERVAL'),
    vacuumMs: env.read('QUEUE_VACUUM_INTERVAL'),
    healthPort: env.read('RECORDER_HEALTH_PORT'),
    stopTimeoutMs: env.read('RECORDER_STOP_TIMEOUT'),
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
