// The recorder and the dispatcher of one checkout, as `pnpm bench:pipeline` runs them: each its own
// Node process from that checkout's files (this one's for ours, the baseline's worktree for the
// baseline), with the production defaults but for what a loopback run needs, as
// bench:dispatcher's end to end runs them. The variables used here have the same names at
// bfbf42d and now (services/*/src/config.ts of each).
import { join } from 'node:path';
import { startChild, waitReady, type Child } from './dispatcher-procs.ts';
import { freePort } from './lib.ts';
import { startFlags } from './service-flags.ts';

export interface ServiceSettings {
  /** The checkout whose services/*\/src/main.ts run. */
  tree: string;
  /** Names the children (and their log files). */
  name: string;
  databaseUrl: string;
  amqpUrl: string;
  amqpPrefix: string;
  /** The test CA the receiver's certificate is signed by. */
  caFile: string;
  /** Node options before each service's script, e.g. `--cpu-prof …` (pipeline.ts, BENCH_PROFILE). */
  nodeArgs: (service: 'recorder' | 'dispatcher') => string[];
}

export async function startServices(s: ServiceSettings): Promise<{ recorder: Child; dispatcher: Child }> {
  const common = {
    DATABASE_URL: s.databaseUrl,
    AMQP_URL: s.amqpUrl,
    AMQP_PREFIX: s.amqpPrefix,
    LOG_LEVEL: 'info',
  };
  const recorderHealth = await freePort();
  const dispatcherHealth = await freePort();
  const recorder = startChild(
    `${s.name}-recorder`,
    join(s.tree, 'services/recorder/src/main.ts'),
    { ...common, RECORDER_HEALTH_PORT: String(recorderHealth) },
    false,
    [...startFlags('recorder', s.tree), ...s.nodeArgs('recorder')],
  );
  const dispatcher = startChild(
    `${s.name}-dispatcher`,
    join(s.tree, 'services/dispatcher/src/main.ts'),
    {
      ...common,
      DISPATCHER_HEALTH_PORT: String(dispatcherHealth),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: s.caFile,
    },
    false,
    [...startFlags('dispatcher', s.tree), ...s.nodeArgs('dispatcher')],
  );
  try {
    await waitReady(recorder, `http://127.0.0.1:${recorderHealth}/readyz`);
    await waitReady(dispatcher, `http://127.0.0.1:${dispatcherHealth}/readyz`);
  } catch (error) {
    await Promise.all([recorder.stop(), dispatcher.stop()]);
    throw error;
  }
  return { recorder, dispatcher };
}
