import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { topology } from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
import { ensureEventPartitions } from '@trips/db/events';
import {
  amqpUrl,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  type TestDatabase,
} from '@trips/testkit';
import { run } from '../src/program.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs tripctl in this process with its own env; output is captured, nothing reaches the terminal. */
export async function cli(argv: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

/** The --json document of a command that must have succeeded; a failure shows its stderr. */
export async function cliJson<T = Record<string, unknown>>(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<T> {
  const result = await cli([...argv, '--json'], env);
  if (result.code !== 0) throw new Error(`tripctl ${argv.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const mainTs = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export interface ProcessResult extends CliResult {
  /** Set when the process had to be killed: it did not end by itself within the timeout. */
  signal: NodeJS.Signals | null;
  /**
   * From its last output to its exit. A pool left open keeps the process alive for pg's idle
   * timeout (10 s) after the work is done; measured from the output, this does not count a slow
   * start on a busy machine.
   */
  lingeredMs: number;
}

/**
 * Runs the real `node packages/tripctl/src/main.ts` as the README tells operators to. Node is
 * process.execPath (Node 24 under jest), so type stripping is the same as in production.
 */
export function spawnCli(
  argv: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    let lastOutput = Date.now();
    const child = execFile(
      process.execPath,
      [mainTs, ...argv],
      {
        cwd: repoRoot,
        env: { PATH: process.env.PATH ?? '', ...env },
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
      },
      (error, stdout, stderr) => {
        const failed = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
        resolve({
          code: typeof failed?.code === 'number' ? failed.code : failed ? -1 : 0,
          signal: failed?.signal ?? null,
          stdout,
          stderr,
          lingeredMs: Date.now() - lastOutput,
        });
      },
    );
    for (const stream of [child.stdout, child.stderr]) stream?.on('data', () => (lastOutput = Date.now()));
  });
}

/** Whatever went wrong, a user never sees a JavaScript stack trace. */
export const STACK_TRACE = /^\s+at .+:\d+:\d+\)?$/m;

/** A database and the dispatcher's deliveries queue, for the commands that publish to it. */
export interface DeliveriesStack {
  t: TestDatabase;
  /** tripctl's environment: the database, the broker and a prefix of this stack's own. */
  env: Record<string, string>;
  /** What the commands published to the deliveries queue, in arrival order. */
  received: DeliveryMessage[];
  close(): Promise<void>;
}

/**
 * A test database with event partitions from three days back (EVENT_RETENTION 2d), and the
 * dispatcher's deliveries queue under a prefix of its own, consumed here in the dispatcher's stead.
 */
export async function deliveriesStack(): Promise<DeliveriesStack> {
  const prefix = randomAmqpPrefix();
  const queue = topology(prefix, []).deliveriesQueue;
  const t = await createTestDatabase();
  const env = { DATABASE_URL: t.url, AMQP_URL: amqpUrl, AMQP_PREFIX: prefix, EVENT_RETENTION: '2d' };
  await ensureEventPartitions(t.db, new Date(Date.now() - 3 * 86_400_000), 4);
  const received: DeliveryMessage[] = [];
  const connection = await amqplib.connect(amqpUrl);
  const ch = await connection.createChannel();
  await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.consume(queue, (msg) => {
    if (!msg) return;
    received.push(JSON.parse(msg.content.toString('utf8')) as DeliveryMessage);
    ch.ack(msg);
  });
  return {
    t,
    env,
    received,
    async close() {
      await connection.close().catch(() => {});
      await deleteAmqpObjects({ queues: [queue] });
      await t.drop();
    },
  };
}

export interface WebhookJson {
  id: string;
  agency_id: string;
  url: string;
  events: string[];
  description: string | null;
  state: string;
  failing_since: string | null;
  disabled_at: string | null;
  last_success_at: string | null;
  last_error: string | null;
  rate_limit: number | null;
  paused: { until: string; status: number; retry_after_ms: number | null; reason: string } | null;
  secret?: string;
}

/** An agency made as an operator makes one. */
export async function newAgencyFor(env: Record<string, string>): Promise<string> {
  return (await cliJson<{ id: string }>(['agency', 'create', '--name', 'Fairway Tours'], env)).id;
}

/** A webhook of `agencyId` for trip.created and payment.paid, made as an operator makes one. */
export async function newWebhookFor(
  env: Record<string, string>,
  agencyId: string,
  ...extra: string[]
): Promise<WebhookJson> {
  return cliJson<WebhookJson>(
    [
      'webhook',
      'create',
      '--agency',
      agencyId,
      '--url',
      'https://hooks.fairway.example/trips',
      '--events',
      'trip.created,payment.paid',
      ...extra,
    ],
    env,
  );
}
