// The three pipelines `pnpm bench:pipeline` compares, each on the same Postgres server and broker
// with a database and an AMQP prefix of its own, dropped and deleted when the bench cleans up:
//   ours      this checkout's recorder and dispatcher, on a clone of our migrated template;
//   baseline  the baseline commit's, from its worktree, on a database its own migrations made;
//   bare      the floor (pipeline-bare.ts), in schema `bare` of a clone of our template.
// Each is prepared once (database, agency, webhook) and started anew for each round, so no
// pipeline's idle processes poll the database or the broker during another's window.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  adminQuery,
  adminUrl,
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
} from '@trips/testkit';
import { queueNames, topology } from '@trips/broker';
import { readConfig } from '@trips/dispatcher';
import type { Child } from './dispatcher-procs.ts';
import { onCleanup } from './lib.ts';
import { createBareSchema, startBare } from './pipeline-bare.ts';
import { startServices } from './pipeline-services.ts';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));

export type PipelineName = 'ours' | 'baseline' | 'bare';

/** A pipeline's processes while a round runs; pids for the CPU count. */
export interface Running {
  recorder: Child;
  dispatcher: Child;
  stop(): Promise<void>;
}

export interface Target {
  name: PipelineName;
  /** The database's name: its backends carry it in their command line. */
  dbName: string;
  dbUrl: string;
  agencyId: string;
  /** The table the writer inserts into. */
  table: 'trips' | 'bare.trips';
  /** What runs, for the report: where its code comes from and its database's last migration. */
  describe: string;
  /** Starts its processes for round `round` (1, 2, …). */
  start(round: number): Promise<Running>;
}

export interface Context {
  /** https://127.0.0.1:<port> of the receiver. */
  receiverBase: string;
  caFile: string;
  /** Node options for ours' recorder and dispatcher in a round (`--cpu-prof …` under BENCH_PROFILE). */
  oursNodeArgs: (service: 'recorder' | 'dispatcher', round: number) => string[];
  /** The baseline's worktree (pipeline-baseline.ts). */
  baselineTree?: string;
}

interface Hook {
  agencyId: string;
  webhookId: string;
  secret: string;
  /** The last migration of the tree that set the database up. */
  migration: string;
}

/** pipeline-setup.ts in `tree`: migrates the database with that tree's code, makes agency and webhook. */
async function setUp(tree: string, databaseUrl: string, webhookUrl: string): Promise<Hook> {
  const { stdout } = await run(process.execPath, [join(tree, 'test/bench/pipeline-setup.ts')], {
    env: { ...process.env, DATABASE_URL: databaseUrl, BENCH_WEBHOOK_URL: webhookUrl },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Hook;
}

/**
 * Deletes every queue and exchange whose name starts with the run's prefix, whichever commit's
 * topology made them, as `rabbitmqctl` lists them; and, in case rabbitmqctl is not at hand here,
 * the names ours and bare use.
 */
async function deleteAmqpPrefix(prefix: string): Promise<void> {
  const list = async (what: string) =>
    (
      await run('rabbitmqctl', ['-q', what, '--no-table-headers', 'name']).catch(() => ({ stdout: '' }))
    ).stdout
      .split('\n')
      .map((name) => name.trim())
      .filter((name) => name.startsWith(prefix));
  // Today's topology at its default delays, and the bare queue.
  const known = topology(prefix, readConfig({}).policy.queueDelaysMs);
  await deleteAmqpObjects({
    queues: [...new Set([...(await list('list_queues')), ...queueNames(known), `${prefix}bare.events`])],
    exchanges: [...new Set([...(await list('list_exchanges')), known.eventsExchange, known.expressExchange])],
  });
}

function ourPrefix(): string {
  const prefix = randomAmqpPrefix();
  onCleanup(() => deleteAmqpPrefix(prefix));
  return prefix;
}

async function ourDatabase() {
  const t = await createTestDatabase();
  onCleanup(() => t.drop());
  return t;
}

/** A database under the test naming scheme, empty, for a tree to migrate itself. */
async function emptyDatabase(): Promise<{ name: string; url: string }> {
  const name = `trips_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  onCleanup(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Ours or the baseline: a checkout's recorder and dispatcher. */
async function servicesTarget(
  name: 'ours' | 'baseline',
  tree: string,
  db: { name: string; url: string },
  ctx: Context,
  nodeArgs: Context['oursNodeArgs'],
): Promise<Target> {
  const path = `/e2e/${name}`;
  const hook = await setUp(tree, db.url, ctx.receiverBase + path);
  const prefix = ourPrefix();
  return {
    name,
    dbName: db.name,
    dbUrl: db.url,
    agencyId: hook.agencyId,
    table: 'trips',
    describe:
      name === 'ours'
        ? `ours: this checkout's recorder and dispatcher; its database a clone of our template, at ${hook.migration}`
        : `baseline: the recorder and dispatcher of a temporary worktree at the baseline commit; ` +
          `its database migrated by that commit's code, to ${hook.migration}`,
    start: async (round) => {
      const services = await startServices({
        tree,
        name,
        databaseUrl: db.url,
        amqpUrl,
        amqpPrefix: prefix,
        caFile: ctx.caFile,
        nodeArgs: (service) => nodeArgs(service, round),
      });
      // Stopped once the window's last event has arrived: nothing is in flight by then.
      return { ...services, stop: () => services.dispatcher.stop().then(() => services.recorder.stop()) };
    },
  };
}

export async function prepareOurs(ctx: Context): Promise<Target> {
  return servicesTarget('ours', REPO, await ourDatabase(), ctx, ctx.oursNodeArgs);
}

export async function prepareBaseline(ctx: Context): Promise<Target> {
  return servicesTarget('baseline', ctx.baselineTree!, await emptyDatabase(), ctx, () => []);
}

export async function prepareBare(ctx: Context): Promise<Target> {
  const t = await ourDatabase();
  await createBareSchema(t.url);
  const path = '/e2e/bare';
  const hook = await setUp(REPO, t.url, ctx.receiverBase + path);
  const prefix = ourPrefix();
  const queue = `${prefix}bare.events`;
  return {
    name: 'bare',
    dbName: t.name,
    dbUrl: t.url,
    agencyId: hook.agencyId,
    table: 'bare.trips',
    describe: `bare: test/bench/pipeline-bare-{relay,consumer}.ts; schema bare in a clone of our template, one quorum queue`,
    start: async () => {
      const { relay, consumer } = await startBare({
        databaseUrl: t.url,
        amqpUrl,
        queue,
        webhookUrl: ctx.receiverBase + path,
        webhookId: hook.webhookId,
        secret: hook.secret,
        caFile: ctx.caFile,
      });
      return {
        recorder: relay,
        dispatcher: consumer,
        stop: () => relay.stop().then(() => consumer.stop()),
      };
    },
  };
}
