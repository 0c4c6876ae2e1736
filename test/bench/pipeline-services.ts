// The recorder and the dispatcher of one checkout, as bench:pipeline, fairness and pace run them: each its own
// Node process from that checkout's files (this one's for ours, the baseline's worktree for the
// baseline), with the production defaults but for what a loopback run needs, as
// bench:dispatcher's end to end runs them. The variables used here have the same names at
// bfbf42d and now (services/*/src/config.ts of each).
import { join } from 'node:path';
import { startChild, waitReady, type Child } from './dispatcher-procs.ts';
import { freePort } from './lib.ts';
import { startFlags, THIS_CHECKOUT } from './service-flags.ts';

export interface ServiceSettings {
  /** The checkout whose services/*\/src/main.ts run; this one by default. */
  tree?: string;
  /** Names the children (and their log files). */
  name: string;
  databaseUrl: string;
  amqpUrl: string;
  amqpPrefix: string;
  /** The test CA the receiver's certificate is signed by. */
  caFile: string;
  /** Node options before each service's script, e.g. `--cpu-prof …` (pipeline.ts, BENCH_PROFILE). */
  nodeArgs?: (service: 'recorder' | 'dispatcher') => string[];
  /** Given each child's stop as it starts, for the caller's cleanup. */
  defer?: (stop: () => Promise<void>) => void;
}

export async function startServices(
  s: ServiceSettings,
): Promise<{ recorder: Child; dispatcher: Child; dispatcherHealthPort: number }> {
  const tree = s.tree ?? THIS_CHECKOUT;
  const started: Child[] = [];
  const start = async (service: 'recorder' | 'dispatcher', own: Record<string, string>) => {
    const health = await freePort();
    const child = startChild(
      `${s.name}-${service}`,
      join(tree, 'services', service, 'src/main.ts'),
      {
        DATABASE_URL: s.databaseUrl,
        AMQP_URL: s.amqpUrl,
        AMQP_PREFIX: s.amqpPrefix,
        LOG_LEVEL: 'info',
        [`${service.toUpperCase()}_HEALTH_PORT`]: String(health),
        ...own,
      },
      false,
      [...startFlags(service, tree), ...(s.nodeArgs?.(service) ?? [])],
    );
    started.push(child);
    s.defer?.(() => child.stop());
    await waitReady(child, `http://127.0.0.1:${health}/readyz`);
    return { child, health };
  };
  try {
    // The dispatcher first: it declares the queues, so nothing the recorder publishes goes unrouted.
    const dispatcher = await start('dispatcher', {
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: s.caFile,
    });
    const recorder = await start('recorder', {});
    return {
      recorder: recorder.child,
      dispatcher: dispatcher.child,
      dispatcherHealthPort: dispatcher.health,
    };
  } catch (error) {
    await Promise.all(started.map((child) => child.stop()));
    throw error;
  }
}
