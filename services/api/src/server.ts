import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDb, pingDatabase } from '@trips/db';
import { findKeyCredentials } from '@trips/db/api-keys';
import { platformSecret } from '@trips/db/platform-secrets';
import { canSeeOtherTransactions } from '@trips/db/sync';
import { createSettings } from '@trips/settings';
import {
  addDependencyMetric,
  createMetricsRegistry,
  portOf,
  startHealthServer,
  type Logger,
} from '@trips/runtime';
import { createApp } from './app.ts';
import { AuthChangeListener, CredentialsCache } from './auth/credentials-cache.ts';
import { KeyUsageRecorder } from './auth/key-usage.ts';
import type { ApiConfig } from './config.ts';
import { requestMetrics } from './http/request-metrics.ts';
import { answerRequestsExpressNeverSees } from './http/requests-express-never-sees.ts';
import { EventCursors } from './routes/event-cursors.ts';
import { addSyncHorizonMetric } from './sync-horizon-metric.ts';
import { LeasedTokenBuckets } from './rate-limit/leases.ts';
import { PostgresBuckets, RedisBuckets } from './rate-limit/token-bucket.ts';

export interface ApiService {
  server: Server;
  url: string;
  /** Where GET /metrics answers. */
  metricsUrl: string;
  stop(): Promise<void>;
}

/** How long a starting replica waits for the rate-limit store before it listens without it. */
const RATE_LIMIT_STORE_WAIT_MS = 2_000;

export const MISSING_STATS_PRIVILEGE =
  "the database role cannot read other sessions' transaction start times, which list sync needs " +
  'so as never to skip a change committed late: grant it pg_read_all_stats (e.g. GRANT pg_monitor TO <role>; ' +
  'docs/operations.md)';

/** Opens every dependency, then listens. Used by main.ts, the tests and the benchmark alike. */
export async function startApiService(config: ApiConfig, logger: Logger): Promise<ApiService> {
  const db = createDb(config.databaseUrl, { max: config.dbPoolSize, applicationName: 'trips-api' });
  // A role that cannot see other sessions' transactions would make list sync skip late commits
  // silently; better not to start, saying why, than to serve lists that lose changes.
  if (!(await canSeeOtherTransactions(db))) {
    await db.destroy();
    throw new Error(MISSING_STATS_PRIVILEGE);
  }
  let eventCursors: EventCursors;
  try {
    eventCursors = new EventCursors(await platformSecret(db, 'event_cursor_key'));
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const credentials = new CredentialsCache((hash) => findKeyCredentials(db, hash), config.keyCacheTtlMs);
  const listener = new AuthChangeListener(config.databaseUrl, credentials, logger);
  await listener.start();
  const keyUsage = new KeyUsageRecorder(db, logger);
  keyUsage.start();
  const sharedBuckets =
    config.rateLimit.store === 'postgres'
      ? new PostgresBuckets(db, config.rateLimit)
      : new RedisBuckets(config.rateLimit.redisUrl, config.rateLimit);
  // Before listening, or a new replica's first requests would find Redis still connecting and go
  // through unlimited. A store that is down is not a reason to stay down with it (fail open).
  if (!(await sharedBuckets.ready(RATE_LIMIT_STORE_WAIT_MS))) {
    logger.warn(
      { store: config.rateLimit.store, waitedMs: RATE_LIMIT_STORE_WAIT_MS },
      'rate limit store unreachable at start: letting requests through until it answers',
    );
  }
  const rateLimits = new LeasedTokenBuckets(sharedBuckets, config.rateLimit);

  const registry = createMetricsRegistry('api');
  addSyncHorizonMetric(registry, db, logger);
  addDependencyMetric(registry, { postgres: () => pingDatabase(db) });
  const app = createApp({
    db,
    logger,
    credentials,
    onKeyUsed: keyUsage.used,
    rateLimits,
    eventRetentionMs: config.eventRetentionMs,
    eventCursors,
    observeRequest: requestMetrics(registry),
    trustProxy: config.trustProxy,
    settingsPage: {
      ...config.settings,
      eventRetentionMs: config.eventRetentionMs,
      settings: createSettings({ db, ...config.settings, eventRetentionMs: config.eventRetentionMs }),
    },
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  // Longer than a load balancer's idle timeout, so it never reuses a socket we just closed.
  server.keepAliveTimeout = 65_000;
  answerRequestsExpressNeverSees(server, logger);
  const { port } = server.address() as AddressInfo;
  // Only /metrics there: the probes stay on the API's own port, where they test what clients use.
  const metricsServer = await startHealthServer(config.metricsPort, { metrics: registry });
  logger.info({ port, metricsPort: portOf(metricsServer) }, 'api listening');

  return {
    server,
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${portOf(metricsServer)}/metrics`,
    // Reverse order of opening: stop taking requests and let in-flight ones finish first, since
    // they still need the pool, the caches and the rate-limit store; then flush key usage (it
    // writes through the pool), and close the pool last.
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await new Promise((resolve) => metricsServer.close(resolve));
      await keyUsage.stop();
      await rateLimits.close();
      await listener.stop();
      await db.destroy();
    },
  };
}
