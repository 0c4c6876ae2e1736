import express from 'express';
import { readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

/** The API's settings (decisions.md D9 names), parsed once at start and frozen. */
export function readConfig(source: Record<string, string | undefined> = process.env) {
  const env = new EnvReader(source);
  const config = {
    ...readCommonConfig(env),
    port: env.int('PORT', 3000, { min: 0, max: 65535 }),
    /** GET /metrics (and the probes) on a port of its own, never routed from outside; 0 picks a free one. */
    metricsPort: env.int('API_METRICS_PORT', 3003, { min: 0, max: 65535 }),
    /** Postgres connections per replica; size max_connections for (replicas × this) + others. */
    dbPoolSize: env.int('API_DB_POOL_SIZE', 10, { min: 1, max: 200 }),
    rateLimit: {
      perSecond: env.int('RATE_LIMIT_PER_SECOND', 50, { min: 1 }),
      burst: env.int('RATE_LIMIT_BURST', 100, { min: 1 }),
      /**
       * Shared by every replica so the limit holds across them (D3). Redis by default: it keeps the
       * tokens out of the database, and renewing a lease there takes no pool connection.
       */
      store: env.string('RATE_LIMIT_STORE', 'redis') as 'redis' | 'postgres',
      redisUrl: env.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:'])!,
    },
    /** How long a replica trusts a cached key before reloading it; changes also evict at once. */
    keyCacheTtlMs: env.duration('API_KEY_CACHE_TTL', '60s'),
    eventRetentionMs: env.duration('EVENT_RETENTION', '30d'),
    shutdownDeadlineMs: env.duration('API_SHUTDOWN_DEADLINE', '20s'),
    /**
     * Which proxies in front of the API to believe for the client's address and scheme (Express'
     * "trust proxy"): by default none, since any client on a trusted address can set
     * X-Forwarded-For and -Proto itself. A deployment names its ingress's addresses (k8s overlays).
     */
    trustProxy: env.string('API_TRUST_PROXY', ''),
    /** The owners' settings page at /settings (issue 5). */
    settings: {
      /** The dispatcher's broker and prefix, for test events and redelivery. */
      amqpUrls: readAmqpUrls(env),
      amqpPrefix: env.string('AMQP_PREFIX', ''),
      /** As the dispatcher's: webhook URLs on private addresses are refused unless true (D7). */
      allowPrivateNetworks: env.bool('WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
      /** Outside production, a refused private URL names WEBHOOK_ALLOW_PRIVATE_NETWORKS. */
      nameDevelopmentSettings: env.string('NODE_ENV', 'development') !== 'production',
      sessionTtlMs: env.duration('SETTINGS_SESSION_TTL', '12h'),
      /** Failed sign-ins allowed per e-mail, and per client address, in each window. */
      signInFailuresPerEmail: env.int('SETTINGS_SIGN_IN_FAILURES_PER_EMAIL', 5, { min: 1 }),
      signInFailuresPerAddress: env.int('SETTINGS_SIGN_IN_FAILURES_PER_ADDRESS', 50, { min: 1 }),
      signInWindowMs: env.duration('SETTINGS_SIGN_IN_WINDOW', '15m'),
    },
  };
  env.check(
    trustProxyParses(config.trustProxy),
    `API_TRUST_PROXY must be a comma-separated list of addresses, CIDR ranges or loopback, linklocal, uniquelocal (got '${config.trustProxy}')`,
  );
  env.check(
    ['redis', 'postgres'].includes(config.rateLimit.store),
    `RATE_LIMIT_STORE must be redis or postgres (got '${config.rateLimit.store}')`,
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
