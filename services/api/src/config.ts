import express from 'express';
import { readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

/**
 * The API's settings, parsed once at start and frozen. Each variable's default, limits and meaning
 * are its row in @trips/runtime's settings table; the rules between settings are here.
 */
export function readConfig(source: Record<string, string | undefined> = process.env) {
  const env = new EnvReader(source);
  const config = {
    ...readCommonConfig(env),
    port: env.read('PORT'),
    metricsPort: env.read('API_METRICS_PORT'),
    dbPoolSize: env.read('API_DB_POOL_SIZE'),
    rateLimit: {
      perSecond: env.read('RATE_LIMIT_PER_SECOND'),
      burst: env.read('RATE_LIMIT_BURST'),
      /**
       * Shared by every replica so the limit holds across them (D3). Redis by default: it keeps the
       * tokens out of the database, and renewing a lease there takes no pool connection.
       */
      store: env.read('RATE_LIMIT_STORE'),
      redisUrl: env.read('REDIS_URL'),
    },
    keyCacheTtlMs: env.read('API_KEY_CACHE_TTL'),
    eventRetentionMs: env.read('EVENT_RETENTION'),
    shutdownDeadlineMs: env.read('API_SHUTDOWN_DEADLINE'),
    /**
     * Which proxies in front of the API to believe for the client's address and scheme (Express'
     * "trust proxy"): by default none, since any client on a trusted address can set
     * X-Forwarded-For and -Proto itself. A deployment names its ingress's addresses (k8s overlays).
     */
    trustProxy: env.read('API_TRUST_PROXY'),
    /** The owners' settings page at /settings. */
    settings: {
      /** The dispatcher's broker and prefix, for test events and redelivery. */
      amqpUrls: readAmqpUrls(env),
      amqpPrefix: env.read('AMQP_PREFIX'),
      /** As the dispatcher's: webhook URLs on private addresses are refused unless true (D7). */
      allowPrivateNetworks: env.read('WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
      /** Outside production, a refused private URL names WEBHOOK_ALLOW_PRIVATE_NETWORKS. */
      nameDevelopmentSettings: env.read('NODE_ENV') !== 'production',
      sessionTtlMs: env.read('SETTINGS_SESSION_TTL'),
      signInFailuresPerEmail: env.read('SETTINGS_SIGN_IN_FAILURES_PER_EMAIL'),
      signInFailuresPerAddress: env.read('SETTINGS_SIGN_IN_FAILURES_PER_ADDRESS'),
      signInWindowMs: env.read('SETTINGS_SIGN_IN_WINDOW'),
    },
  };
  env.check(
    trustProxyParses(config.trustProxy),
    `API_TRUST_PROXY must be a comma-separated list of addresses, CIDR ranges or loopback, linklocal, uniquelocal (got '${config.trustProxy}')`,
  );
  env.done();
  return Object.freeze(config);
}

export type ApiConfig = ReturnType<typeof readConfig>;

/** Whether Express takes `value` as its "trust proxy" setting, checked by Express' own parser. */
function trustProxyParses(value: string): boolean {
  if (value === '') return true; // no proxy trusted
  try {
    express().set('trust proxy', value);
    return true;
  } catch {
    return false;
  }
}
