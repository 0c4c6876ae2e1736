import type { Server } from 'node:http';
import type { Kysely } from 'kysely';
import { declareTopology, topology, type QueueLimits, type Topology } from '@trips/broker';
import {
  ConfirmPublisher,
  connectBroker,
  Consumer,
  RecoveringChannel,
  type AmqpConnectionManager,
  type Handler,
} from '@trips/broker/client';
import { compileValidators, type DeliveryMessage } from '@trips/contracts';
import { createDb, pingDatabase, type Database } from '@trips/db';
import { countHeldDeliveries, oldestPendingDeliveryAges } from '@trips/db/held-deliveries';
import { DISPATCHER_QUEUE_TABLES, vacuumQueueTables } from '@trips/db/queue-tables';
import { pruneWebhookAttempts } from '@trips/db/webhook-attempts';
import {
  addDependencyMetric,
  createMetricsRegistry,
  Loop,
  portOf,
  startHealthServer,
  type Logger,
} from '@trips/runtime';
import type { DispatcherConfig } from './config.ts';
import { Deliverer, type Outcome } from './deliverer.ts';
import { Endpoints, type EndpointProtection } from './endpoint/endpoints.ts';
import { fanOutHandler } from './fan-out.ts';
import { LaneBell, laneEntry } from './lanes/bell.ts';
import { Lanes, type LanesDeps } from './lanes/lanes.ts';
import { Sender } from './sender.ts';
import { Mailer } from './mailer.ts';
import { dispatcherMetrics } from './metrics.ts';
import { DeliveryStore } from './store.ts';
import { enforceSwitchOff } from './switch-off.ts';
import { DeliveryTargetsCache } from './targets-cache.ts';
import { TargetsListener, type TargetsCacheEvent } from './targets-listener.ts';

export interface DispatcherService {
  readonly healthPort: number;
  stop(): Promise<void>;
}

export interface DispatcherHooks {
  /** Told about every delivery outcome (tests, benchmarks). */
  onOutcome?: (outcome: Outcome, delivery: DeliveryMessage) => void;
  /** Overrides the breaker and concurrency defaults (tests). */
  protection?: Partial<EndpointProtection>;
  /** Overrides the queues' bounds (tests; every replica must declare the same). */
  queueLimits?: QueueLimits;
  /** Told of every webhook change notified, and when the cache starts or stops being used (tests). */
  onTargetsCache?: (event: TargetsCacheEvent) => void;
  /** Overrides the pause before the lost LISTEN connection is opened again (tests). */
  targetsListenRetryMs?: number;
  /** Told the text of every statement the dispatcher's pools send (tests that count round trips). */
  onStatement?: (sql: string) => void;
}

/**
 * An endpoint slower than this on average is not attempted while a shared queue's message waits on
 * the attempt: its deliveries go to its lane (endpoints.ts). A second: a healthy endpoint answers
 * well within it, and a message held that long still leaves the prefetch to everyone else.
 */
const INLINE_MAX_MS = 1_000;

/** Connections of the express queue's lookups, which run one batch at a time (batching.ts). */
const EXPRESS_POOL_SIZE = 2;

/** Deliveries claimed from one lane at once, at most: the per-webhook cap's worth (lanes.ts). */
const claimSize = (config: DispatcherConfig) => config.endpointConcurrency;

/** Opens the dependencies, starts the consumers, loops and health server. */
export async function startDispatcherService(
  config: DispatcherConfig,
  logger: Logger,
  hooks: DispatcherHooks = {},
): Promise<DispatcherService> {
  // Every message is validated (fan-out.ts, deliverer.ts): compile the schemas before the first.
  compileValidators();
  const openDb = (max: number, applicationName: string) =>
    createDb(config.databaseUrl, { max, applicationName, onStatement: hooks.onStatement });
  const db = openDb(10, 'trips-dispatcher');
  const names = topology(config.amqpPrefix, config.policy.queueDelaysMs, hooks.queueLimits);
  const connection = connectBroker(config.amqpUrls, logger);

  const sender = new Sender({
    timeoutMs: config.timeoutMs,
    allowPrivateNetworks: config.allowPrivateNetworks,
    ca: config.ca,
  });
  // One cache of webhooks per process (targets-cache.ts), kept fresh by the listener below.
  const targetsCache = new DeliveryTargetsCache({ ttlMs: config.webhookCacheTtlMs });
  // Deliveries in flight share their database round trips (store.ts, batching.ts).
  const store = new DeliveryStore(db, targetsCache, logger.child({ component: 'deliveries' }));
  // The endpoints and the deliverer ring it, the lanes answer (lanes.ts).
  const bell = new LaneBell();
  const endpoints = createEndpoints(config, { store, bell }, hooks.protection);
  const targetsListener = createTargetsListener(config, { targetsCache, endpoints }, hooks, logger);
  /** Tells a Postgres outage from a message that fails on its own (@trips/broker's Consumer). */
  const postgresUp = () => pingDatabase(db).then(() => true);
  const { registry, inspector, metrics } = createMetrics(connection, { endpoints, names, db }, logger);
  const mailer = new Mailer(
    db,
    { smtpUrl: config.smtpUrl, from: config.mailFrom },
    logger.child({ component: 'mailer' }),
  );

  const deliverer = new Deliverer({
    store,
    sender,
    endpoints,
    lanes: laneEntry(store, bell),
    policy: config.policy,
    topology: names,
    logger: logger.child({ component: 'deliverer' }),
    onOutcome: (outcome, delivery, source, capturedAt) => {
      metrics.observe(outcome, delivery, source, capturedAt);
      hooks.onOutcome?.(outcome, delivery);
    },
    onLineWait: metrics.lineWait,
  });
  // Lane attempts hold no message: their retries go out on a confirm channel of their own.
  const laneChannel = new ConfirmPublisher(connection, { name: 'lanes' }, logger);
  const lanes = createLanes(config, { store, endpoints, deliverer, publisher: laneChannel, bell }, logger);
  // Quiet agencies' events look up their webhooks on connections and in batches of their own: an
  // import's lookups, in a busy Postgres, never stand in front of them. Attempts are recorded in
  // one pipeline per process, as two would wait on each other's lock of the webhook's row.
  const expressDb = openDb(EXPRESS_POOL_SIZE, 'trips-dispatcher-express');
  const { fanOut, express, deliveries } = createConsumers(
    connection,
    config,
    {
      names,
      postgresUp,
      deliverer,
      lookups: {
        fanOut: store,
        express: new DeliveryStore(expressDb, targetsCache, logger.child({ component: 'deliveries' })),
      },
    },
    logger,
  );
  const loops = createLoops(db, config, { mailer, metrics }, logger);

  // Health first: while RabbitMQ refuses our queues (say, declared elsewhere with other
  // arguments), the process stays up, alive but not ready, and logs why, instead of failing its
  // startup probe and restarting into the same refusal.
  const health: Server = await startHealthServer(config.healthPort, {
    metrics: registry,
    live: () => true,
    ready: async () => (await postgresUp()) && fanOut.connected && express.connected && deliveries.connected,
  });
  logger.info({ healthPort: portOf(health) }, 'health port open');
  // Before the first delivery, so it can already use the cache; without Postgres it keeps trying.
  await targetsListener?.start();
  await Promise.all([fanOut.ready(), express.ready(), deliveries.ready()]);
  lanes.start();
  for (const loop of Object.values(loops)) loop.start();
  logger.info({ queues: names, healthPort: portOf(health) }, 'dispatcher started');

  return {
    healthPort: portOf(health),
    async stop() {
      // Consumers first: they stop taking messages and finish the attempts in flight, which still
      // need the channel (to ack, to queue retries) and the pool (to record attempts). The loops
      // next, each finishing its round; then the connections they all used.
      await Promise.all([fanOut.stop(), express.stop(), deliveries.stop(), lanes.stop()]);
      // The consumers and lanes were the only lookups of webhooks: nothing needs their changes now.
      await targetsListener?.stop();
      await laneChannel.close();
      // The mailer before its loop: a send hanging on a silent mail server would hold the loop's
      // round past the stop deadline; closed, it ends now and gives its notice back at once.
      mailer.close();
      await Promise.all(Object.values(loops).map((loop) => loop.stop()));
      await inspector.close();
      await connection.close();
      endpoints.close();
      sender.close();
      await new Promise((resolve) => health.close(resolve));
      await Promise.all([db.destroy(), expressDb.destroy()]);
      logger.info('dispatcher stopped');
    },
  };
}

/**
 * The one LISTEN connection that keeps the webhooks cache fresh and tells the endpoints of pauses
 * other dispatchers were asked for; with DISPATCHER_WEBHOOK_CACHE_TTL 0 there is none, the cache is
 * never trusted and every batch reads (pauses then come with those reads).
 */
function createTargetsListener(
  config: DispatcherConfig,
  deps: { targetsCache: DeliveryTargetsCache; endpoints: Endpoints },
  hooks: DispatcherHooks,
  logger: Logger,
): TargetsListener | undefined {
  if (config.webhookCacheTtlMs <= 0) return undefined;
  return new TargetsListener(
    config.databaseUrl,
    deps.targetsCache,
    logger.child({ component: 'webhook-changes' }),
    {
      onEvent: hooks.onTargetsCache,
      retryMs: hooks.targetsListenRetryMs,
      onPause: (webhookId, until) => deps.endpoints.pausedElsewhere(webhookId, until),
    },
  );
}

/**
 * Each webhook's endpoint in this process: its slots, the slow-endpoint rule, the breaker, the
 * receiver's pace and the owner's rate (endpoint/).
 */
function createEndpoints(
  config: DispatcherConfig,
  deps: { store: DeliveryStore; bell: LaneBell },
  protection?: Partial<EndpointProtection>,
): Endpoints {
  return new Endpoints(
    {
      concurrency: config.endpointConcurrency,
      inlineMaxMs: INLINE_MAX_MS,
      inlineWaitMs: config.inlineWaitMs,
      // Every threshold is a setting, with why its default is what it is (config.ts).
      breaker: {
        errorThresholdPercentage: config.breakerErrorPercent,
        volumeThreshold: config.breakerVolume,
        rollingWindowMs: config.breakerWindowMs,
        cooldownMs: config.breakerCooldownMs,
      },
      pace: config.policy.pause,
      ...protection,
    },
    {
      reserveSendTimes: (webhookId, count, intervalMs) =>
        deps.store.reserveSendTimes(webhookId, count, intervalMs),
      onRoom: (webhookId) => deps.bell.ring(webhookId, 'room'),
    },
  );
}

/** The Prometheus registry and the dispatcher's metrics, with the channel that reads queue depths. */
function createMetrics(
  connection: AmqpConnectionManager,
  deps: { endpoints: Endpoints; names: Topology; db: Kysely<Database> },
  logger: Logger,
) {
  const registry = createMetricsRegistry('dispatcher');
  // A channel of its own for reading queue depths on scrape, apart from the consumers' channels: a
  // check of a missing queue makes RabbitMQ close it, and RecoveringChannel opens a new one.
  const inspector = new RecoveringChannel(connection, { name: 'metrics', setup: async () => {} }, logger);
  const metrics = dispatcherMetrics(registry, {
    endpoints: deps.endpoints,
    checkQueue: (queue) => inspector.wrapper.checkQueue(queue),
    topology: deps.names,
    countHeld: () => countHeldDeliveries(deps.db),
    pendingAges: () => oldestPendingDeliveryAges(deps.db),
  });
  addDependencyMetric(registry, {
    postgres: () => pingDatabase(deps.db),
    rabbitmq: () => connection.isConnected(),
  });
  return { registry, inspector, metrics };
}

function createLanes(config: DispatcherConfig, deps: LanesDeps, logger: Logger): Lanes {
  return new Lanes(
    deps,
    {
      leaseMs: config.policy.laneLeaseMs,
      scanIntervalMs: config.laneScanIntervalMs,
      claimSize: claimSize(config),
      maxInFlight: config.laneMaxInFlight,
    },
    logger.child({ component: 'lanes' }),
  );
}

/**
 * The consumers attempt deliveries when the webhook has room, and hold them in its lane when not:
 * fan-out (of the events queue, and of the express queue for quiet agencies) the first attempt of
 * each, the deliveries queue the retries.
 */
function createConsumers(
  connection: AmqpConnectionManager,
  config: DispatcherConfig,
  deps: {
    names: Topology;
    postgresUp: () => Promise<boolean>;
    deliverer: Deliverer;
    /** Where each fan-out reads the subscribed webhooks. */
    lookups: { fanOut: DeliveryStore; express: DeliveryStore };
  },
  logger: Logger,
) {
  const { names, postgresUp, deliverer, lookups } = deps;
  const consumer = (name: string, queue: string, handle: Handler) =>
    new Consumer(
      connection,
      {
        name,
        queue,
        prefetch: config.prefetch,
        idleReopenMs: config.consumerIdleReopenMs,
        setup: (ch) => declareTopology(ch, names),
        handle,
        dependenciesUp: postgresUp,
      },
      logger,
    );
  const fanOutLogger = logger.child({ component: 'fan-out' });
  const fanOutOf = (store: DeliveryStore) => fanOutHandler({ store, deliverer, logger: fanOutLogger });
  return {
    fanOut: consumer('fan-out', names.eventsQueue, fanOutOf(lookups.fanOut)),
    express: consumer('express', names.expressQueue, fanOutOf(lookups.express)),
    deliveries: consumer('deliveries', names.deliveriesQueue, (message, publisher) =>
      deliverer.handle(message, publisher),
    ),
  };
}

/**
 * The loops beside the consumers: owners' notices by mail, the switch-off rules, the attempts'
 * pruning, the lanes' table vacuumed.
 */
function createLoops(
  db: Kysely<Database>,
  config: DispatcherConfig,
  deps: { mailer: Mailer; metrics: ReturnType<typeof dispatcherMetrics> },
  logger: Logger,
) {
  const mail = new Loop('mail', () => deps.mailer.sendBatch(), 1_000, logger);
  const switchOff = new Loop(
    'switch-off',
    async () => {
      const { switchedOff, warned } = await enforceSwitchOff(
        db,
        config.policy,
        {
          settingsUrl: config.settingsUrl,
          failureWindowMs: config.policy.failureWindowMs,
          eventRetentionMs: config.retentionMs,
        },
        logger.child({ component: 'switch-off' }),
      );
      deps.metrics.switchedOff.inc(switchedOff.length);
      if (switchedOff.length + warned.length > 0) mail.kick();
      return 0; // runs on its interval, never back to back
    },
    config.policy.sweepIntervalMs,
    logger,
  );
  const prune = new Loop(
    'prune-attempts',
    () => pruneWebhookAttempts(db, new Date(Date.now() - config.retentionMs)),
    60 * 60_000,
    logger,
  );
  const vacuum = new Loop(
    'vacuum',
    async () => (await vacuumQueueTables(db, DISPATCHER_QUEUE_TABLES), 0),
    config.vacuumMs,
    logger,
  );
  return { mail, switchOff, prune, vacuum };
}
