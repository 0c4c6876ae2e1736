import type { Server } from 'node:http';
import type { Kysely } from 'kysely';
import { connectBroker } from '@trips/broker/client';
import { createDb, pingDatabase, type Database } from '@trips/db';
import { RECORDER_QUEUE_TABLES, vacuumQueueTables } from '@trips/db/queue-tables';
import {
  addDependencyMetric,
  createMetricsRegistry,
  Loop,
  portOf,
  startHealthServer,
  tracing,
  type Logger,
} from '@trips/runtime';
import { eventsExchange, expressExchange, type RecorderConfig } from './config.ts';
import { recorderMetrics } from './metrics.ts';
import { REFUSED_RETRY_MS } from './publish-pace.ts';
import { Publisher } from './publisher.ts';
import { Recorder } from './recorder.ts';
import { traceRecorded } from './tracing.ts';

export interface RecorderService {
  readonly recorder: Recorder;
  readonly publisher: Publisher;
  /** The port /healthz and /readyz answer on (useful when configured as 0). */
  readonly healthPort: number;
  stop(): Promise<void>;
}

/** Opens the dependencies, starts the loops and the health server. */
export async function startRecorderService(config: RecorderConfig, logger: Logger): Promise<RecorderService> {
  const db: Kysely<Database> = createDb(config.databaseUrl, { max: 4, applicationName: 'trips-recorder' });
  const exchange = eventsExchange(config);

  const connection = connectBroker(config.amqpUrls, logger);
  const registry = createMetricsRegistry('recorder');
  const metrics = recorderMetrics(registry, db);
  addDependencyMetric(registry, {
    postgres: () => pingDatabase(db),
    rabbitmq: () => connection.isConnected(),
  });
  const recorder = new Recorder(db, config, logger.child({ component: 'recorder' }));
  const publisher = new Publisher(
    db,
    connection,
    {
      exchange,
      expressExchange: expressExchange(config),
      batchSize: config.batchSize,
      publishTimeoutMs: config.publishTimeoutMs,
      onPublished: (events) => metrics.eventsPublished(events),
      // A batch the recorder opened left work: as the loop's own round would (below).
      wake: () =>
        publisher.queueFull
          ? setTimeout(() => publishLoop.kick(), REFUSED_RETRY_MS).unref()
          : publishLoop.kick(),
    },
    logger.child({ component: 'publisher' }),
  );
  await recorder.maintain();

  const publishLoop = new Loop(
    'publish',
    async () => {
      const published = await publisher.runBatch();
      // The events queue was full: try again as soon as it may have room, not a poll interval later.
      if (publisher.queueFull) setTimeout(() => publishLoop.kick(), REFUSED_RETRY_MS).unref();
      // At once again only while events are likely waiting; otherwise the next recording kicks it.
      return publisher.moreWaiting ? published || 1 : 0;
    },
    config.pollMs,
    logger,
  );
  const recordLoop = new Loop(
    'record',
    async () => {
      const batch = await recorder.runBatch(() => publisher.open());
      const { changes, events, full } = batch;
      const tracer = tracing.tracer;
      if (tracer && events.length) traceRecorded(tracer, batch);
      metrics.batchRecorded(batch);
      // Publish right after the commit instead of at the publisher's next poll, unless the batch
      // opened the publisher's batch itself.
      if (events.length && !batch.publishing) {
        publisher.expect();
        publishLoop.kick();
      }
      // At once again only after a full batch. One that took everything there was waits for the
      // next poll, so the next batch gathers what the writers commit meanwhile instead of a few
      // rows per round trip (docs/events.md, "Round trips").
      return full ? changes + events.length : 0;
    },
    config.pollMs,
    logger,
  );
  const maintainLoop = new Loop(
    'maintain',
    async () => (await recorder.maintain(), 0),
    config.maintenanceMs,
    logger,
  );
  const vacuumLoop = new Loop(
    'vacuum',
    async () => (await vacuumQueueTables(db, RECORDER_QUEUE_TABLES), 0),
    config.vacuumMs,
    logger,
  );

  const health: Server = await startHealthServer(config.healthPort, {
    metrics: registry,
    live: () => true,
    ready: async () => {
      await pingDatabase(db);
      return true;
    },
  });
  recordLoop.start();
  publishLoop.start();
  maintainLoop.start();
  vacuumLoop.start();
  logger.info({ exchange, healthPort: portOf(health) }, 'recorder started');

  return {
    recorder,
    publisher,
    healthPort: portOf(health),
    async stop() {
      // Reverse order of start. The loops first: each finishes its current batch, which commits or
      // rolls back whole, so nothing is half-recorded. The publisher's loop must end before the
      // channel closes (its batch waits for confirms), and both loops before the pool closes
      // (they use it). The health server goes last-but-pool so probes see a live process until then.
      await Promise.all([recordLoop.stop(), maintainLoop.stop(), vacuumLoop.stop()]);
      await publishLoop.stop();
      await publisher.close();
      await connection.close();
      await new Promise((resolve) => health.close(resolve));
      await db.destroy();
      logger.info('recorder stopped');
    },
  };
}
