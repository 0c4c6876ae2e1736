// What every part of `pnpm bench:dispatcher` shares: a fresh database, a random AMQP prefix, a
// throwaway CA, the HTTPS receiver (its own process), one agency per part, a confirm channel for
// the feeder, and a way to start dispatchers as processes. Cleanup is registered as it is made.
import { fileURLToPath } from 'node:url';
import amqplib, { type ConfirmChannel } from 'amqplib';
import { topology, type Topology } from '@trips/broker';
import { createAgency } from '@trips/db/agencies';
import { generateSigningKeyPair } from '@trips/contracts/webhook-signing';
import { addSigningKeyIn } from '@trips/db/webhook-signing-keys';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  randomAmqpPrefix,
  type TestCa,
  type TestDatabase,
} from '@trips/testkit';
import { deleteAmqp, startChild, waitReady, type Child } from './dispatcher-procs.ts';
import { freePort, onCleanup } from './lib.ts';
import { startFlags } from './service-flags.ts';

const DISPATCHER = fileURLToPath(new URL('../../services/dispatcher/src/main.ts', import.meta.url));
const RECEIVER = fileURLToPath(new URL('./dispatcher-receiver.ts', import.meta.url));

/** Webhooks of the isolation part: one agency, each event delivered to all of them. */
export const WEBHOOKS = 10;

/** The receiver's 2xx answers per path so far, and when it counted them (epoch ms). */
export interface Snapshot {
  at: number;
  counts: Record<string, number>;
}

export const sum = (s: Snapshot, paths: readonly string[]) =>
  paths.reduce((n, p) => n + (s.counts[p] ?? 0), 0);

/** Deliveries per second to `paths` between two snapshots. */
export const rate = (a: Snapshot, b: Snapshot, paths: readonly string[]) =>
  (sum(b, paths) - sum(a, paths)) / ((b.at - a.at) / 1000);

export interface Agency {
  id: string;
  /** Its first webhook's secret (the bare senders sign with it). */
  secret: string;
  webhookIds: string[];
  /** The receiver's path of each webhook, in order. */
  paths: string[];
}

export type Dispatcher = Child & { healthPort: number };

export interface Bench {
  t: TestDatabase;
  ca: TestCa;
  names: Topology;
  /** DATABASE_URL, AMQP_URL, AMQP_PREFIX and LOG_LEVEL, as every service here runs. */
  serviceEnv: Record<string, string>;
  receiver: Child;
  /** The receiver's origin, https://127.0.0.1:<port>. */
  base: string;
  /** The feeder's: the events exchange, with publisher confirms. */
  channel: ConfirmChannel;
  /** `bare`: the throughput part's bare consumer's webhook, in an agency ours is never fed for. */
  agencies: { throughput: Agency; bare: Agency; isolation: Agency; e2e: Agency; ed25519: Agency };
  snapshot(): Promise<Snapshot>;
  /** A dispatcher with the production defaults but `env`, ready (its /readyz answers). */
  startDispatcher(name: string, env: Record<string, string>, nodeArgs?: string[]): Promise<Dispatcher>;
}

export async function setUp(): Promise<Bench> {
  const ca = await createTestCa();
  const t = await createTestDatabase();
  onCleanup(() => t.drop());
  const prefix = randomAmqpPrefix();
  // The default retry delays (WEBHOOK_RETRY_DELAYS), as the dispatchers here run.
  const names = topology(prefix, readConfig({}).policy.queueDelaysMs);
  onCleanup(() => deleteAmqp(prefix, names));

  const receiver = startChild('receiver', RECEIVER, { BENCH_TLS_KEY: ca.key, BENCH_TLS_CERT: ca.cert }, true);
  onCleanup(() => receiver.stop());
  const { port } = await receiver.next<{ port: number }>((m) => m.ready === true);
  const base = `https://127.0.0.1:${port}`;

  // One agency per part, so each part's events reach only its own webhooks.
  const agency = async (name: string, paths: string[]): Promise<Agency> => {
    const { id } = await createAgency(t.db, { name, apiEnabled: true, subscriptionStatus: 'active' });
    const hooks = [];
    for (const path of paths) {
      hooks.push(await createWebhook(t.db, { agencyId: id, url: base + path, eventTypes: ['trip.created'] }));
    }
    return { id, secret: hooks[0]!.secret, webhookIds: hooks.map((h) => h.webhook.id), paths };
  };
  const agencies = {
    throughput: await agency('Throughput', ['/t/ours']),
    bare: await agency('Throughput, the bare consumer', ['/t/consumer']),
    isolation: await agency(
      'Isolation',
      Array.from({ length: WEBHOOKS }, (_, i) => `/i/${i}`),
    ),
    e2e: await agency('End to end', ['/e2e']),
    ed25519: await agency('Signing, ed25519', ['/s/ed25519']),
  };
  await t.db
    .transaction()
    .execute((trx) => addSigningKeyIn(trx, agencies.ed25519.webhookIds[0]!, generateSigningKeyPair(), 0));

  const conn = await amqplib.connect(amqpUrl);
  onCleanup(() => conn.close().catch(() => {}));
  const channel = await conn.createConfirmChannel();
  channel.on('error', () => {});

  const serviceEnv = { DATABASE_URL: t.url, AMQP_URL: amqpUrl, AMQP_PREFIX: prefix, LOG_LEVEL: 'info' };
  const startDispatcher = async (name: string, env: Record<string, string>, nodeArgs: string[] = []) => {
    const healthPort = await freePort();
    const settings = {
      ...serviceEnv,
      DISPATCHER_HEALTH_PORT: String(healthPort),
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
      ...env,
    };
    const child = startChild(name, DISPATCHER, settings, nodeArgs.length > 0, [
      ...startFlags('dispatcher'),
      ...nodeArgs,
    ]);
    onCleanup(() => child.stop());
    await waitReady(child, `http://127.0.0.1:${healthPort}/readyz`);
    return Object.assign(child, { healthPort });
  };
  return {
    t,
    ca,
    names,
    serviceEnv,
    receiver,
    base,
    channel,
    agencies,
    snapshot: () => receiver.request<Snapshot>({ op: 'snapshot' }),
    startDispatcher,
  };
}

/** A counter of the dispatcher's metrics (its /metrics), e.g. deliveries by outcome. */
export async function deliveriesCounted(dispatcher: Dispatcher, outcome: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${dispatcher.healthPort}/metrics`)).text();
  const line = new RegExp(`^trips_deliveries_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'm');
  return Number(line.exec(text)?.[1] ?? 0);
}

/** Settings (JSON) over the production defaults of the isolation and end-to-end dispatchers, to explore them. */
export const DEFAULTS_OVERRIDDEN: Record<string, string> = JSON.parse(
  process.env.BENCH_DISPATCHER_ENV ?? '{}',
);
