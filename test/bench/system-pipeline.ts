// The pipeline of test/bench/system.ts, between the host's writes and the receiver: ours (the
// recorder and the dispatchers, as processes of their own with production flags) or the bare one of
// pipeline-bare.ts (a relay and a consumer), the floor of the same work.
import { fileURLToPath } from 'node:url';
import { amqpUrl } from '@trips/testkit';
import { startChild as startProcess, waitReady, type Child } from './dispatcher-procs.ts';
import { freePort, onCleanup } from './lib.ts';
import { createBareSchema, startBare } from './pipeline-bare.ts';
import { startFlags } from './service-flags.ts';

const RECORDER = fileURLToPath(new URL('../../services/recorder/src/main.ts', import.meta.url));
const DISPATCHER = fileURLToPath(new URL('../../services/dispatcher/src/main.ts', import.meta.url));

/** Between the writes and the receiver: ours, or the bare pipeline (the floor). */
export type Pipeline = 'ours' | 'bare';

/**
 * What differs between the pipelines besides their processes: the table the host's writes go to,
 * where the events are kept, the tables events wait in, what the two processes are called, and
 * whether it carries the trips the system seeds into `trips` (the bare one reads its own table).
 */
export const PIPELINE_SHAPES = {
  ours: {
    tripsTable: 'trips',
    eventsTable: 'events',
    queueTables: ['outbox', 'events_unpublished'],
    relayer: 'recorder',
    sender: 'dispatcher',
    carriesSeededTrips: true,
  },
  bare: {
    tripsTable: 'bare.trips',
    eventsTable: 'bare.events',
    queueTables: ['bare.outbox'],
    relayer: 'relay',
    sender: 'consumer',
    carriesSeededTrips: false,
  },
} as const;

/** A process of the pipeline; ours serve their metrics on `metricsPort`. */
export type PipelineProcess = Child & { metricsPort?: number };

/**
 * Starts the pipeline between the writes and the receiver: ours' dispatchers (first: they declare
 * the queues, so no event the recorder publishes goes unrouted) and recorder, or the bare relay and
 * consumer on a queue of their own. Answers its processes and its queues.
 */
export async function startPipeline(
  pipeline: Pipeline,
  s: {
    env: Record<string, string>;
    dispatchers: number;
    caFile: string;
    ourQueues: string[];
    webhookUrl: string;
    webhook: { id: string; secret: string };
  },
): Promise<{ relayer: PipelineProcess; senders: PipelineProcess[]; queues: string[] }> {
  if (pipeline === 'bare') {
    await createBareSchema(s.env.DATABASE_URL!);
    const queue = `${s.env.AMQP_PREFIX}bare.events`;
    const { relay, consumer } = await startBare({
      databaseUrl: s.env.DATABASE_URL!,
      amqpUrl,
      queue,
      webhookUrl: s.webhookUrl,
      webhookId: s.webhook.id,
      secret: s.webhook.secret,
      caFile: s.caFile,
    });
    onCleanup(() => relay.stop().then(() => consumer.stop()));
    return { relayer: relay, senders: [consumer], queues: [queue] };
  }
  const dispatchers: PipelineProcess[] = [];
  for (let n = 1; n <= s.dispatchers; n++)
    dispatchers.push(
      await startService(
        s.env,
        'dispatcher',
        'DISPATCHER_HEALTH_PORT',
        { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_CA_FILE: s.caFile },
        n === 1 ? 'dispatcher' : `dispatcher-${n}`,
      ),
    );
  const recorder = await startService(s.env, 'recorder', 'RECORDER_HEALTH_PORT', {});
  return { relayer: recorder, senders: dispatchers, queues: s.ourQueues };
}

/** One of our services with production flags, ready; it serves its metrics on its health port. */
async function startService(
  env: Record<string, string>,
  name: 'recorder' | 'dispatcher',
  healthVariable: string,
  own: Record<string, string>,
  label: string = name,
): Promise<PipelineProcess> {
  const healthPort = await freePort();
  const child = startProcess(
    label,
    name === 'recorder' ? RECORDER : DISPATCHER,
    { ...env, [healthVariable]: String(healthPort), ...own },
    false,
    startFlags(name),
  );
  onCleanup(() => child.stop());
  await waitReady(child, `http://127.0.0.1:${healthPort}/readyz`);
  return Object.assign(child, { metricsPort: healthPort });
}
