/* eslint-disable no-console -- a benchmark prints its figures to the terminal */
// Recorder benchmark, run by `pnpm bench:recorder` (test/bench/recorder.ts). It lives beside the
// recorder so it resolves the recorder's own dependencies (amqplib, kysely). A write storm from
// several connections, then a paced load at 500 events/s for latency, then the floor: the same
// storm through bench:pipeline's bare relay (test/bench/pipeline-bare-relay.ts), the least an
// outbox relay can do for the same work with the same durability: each batch's events kept in a
// bare events table (the columns, primary key and cursor index GET /events needs) in the
// transaction that deletes the batch from its outbox, committed only once the broker confirmed
// them, into a quorum queue, as ours' queues are. For reference, beside it: the same relay keeping
// no events (the old floor, which did less than ours: docs/benchmarks.md, "Recorder"), and a bare
// confirm-channel publisher with no database at all, the floor before that.
// Uses the local Postgres (DATABASE_URL) and RabbitMQ (AMQP_URL); results go in
// docs/benchmarks/recorder.md, the latest with their targets in docs/benchmarks.md.
import { spawn } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import amqplib from 'amqplib';
import { sql, type Kysely } from 'kysely';
import { createDb, type Database } from '@trips/db';
import { readEventPage } from '@trips/db/events';
import { amqpUrl, createTestDatabase, deleteAmqpObjects, randomAmqpPrefix } from '@trips/testkit';
import { startChild } from '../../../test/bench/dispatcher-procs.ts';
import { createBareSchema } from '../../../test/bench/pipeline-bare.ts';

const WRITERS = Number(process.env.BENCH_WRITERS ?? 6);
const STORM_EVENTS = Number(process.env.BENCH_EVENTS ?? 30_000);
const PER_TXN = 10;
const PACED_RATE = 500; // events/s
const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 10);

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const BARE_RELAY = fileURLToPath(new URL('../../../test/bench/pipeline-bare-relay.ts', import.meta.url));
const t = await createTestDatabase();
const prefix = randomAmqpPrefix();
const exchange = `${prefix}trips.events`;
/** Where the recorder publishes a quiet agency's events (its express.ts): the consumer takes both. */
const expressExchange = `${prefix}trips.events.express`;
await sql`INSERT INTO agencies (id, name) VALUES ('agy_bench', 'Bench')`.execute(t.db);

// Consumer: records when each trip's event arrives.
const conn = await amqplib.connect(amqpUrl);
const ch = await conn.createChannel();
await ch.assertExchange(exchange, 'topic', { durable: true });
const queueName = `${prefix}bench`;
// A quorum queue, as the dispatcher's are, so ours and the bare relay confirm against the same kind.
await ch.assertQueue(queueName, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
await ch.bindQueue(queueName, exchange, '#');
await ch.assertExchange(expressExchange, 'topic', { durable: true });
await ch.bindQueue(queueName, expressExchange, '#');
const arrived = new Map<string, number>();
await ch.consume(
  queueName,
  (msg) => {
    if (!msg) return;
    const body = JSON.parse(msg.content.toString()) as { event: { related_object: { id: string } } };
    arrived.set(body.event.related_object.id, performance.now());
  },
  { noAck: true },
);

const recorder = spawn(process.execPath, [main], {
  env: {
    ...process.env,
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    RECORDER_HEALTH_PORT: '0',
    RECORDER_POLL_INTERVAL: process.env.RECORDER_POLL_INTERVAL ?? '10ms',
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});
await new Promise((resolve) => setTimeout(resolve, 1_500));

// Visibility poller: the query GET /events runs, every 2 ms.
const visible = new Map<string, number>();
let polling = true;
const poller = (async () => {
  let after = 0;
  while (polling) {
    const page = await readEventPage(t.db, {
      agencyId: 'agy_bench',
      afterSeq: after,
      types: ['trip.created'],
      limit: 1000,
      retentionMs: 86_400_000,
    });
    const now = performance.now();
    for (const e of page.events) visible.set(e.object_id, now);
    after = page.events.length === 1000 ? page.events.at(-1)!.seq : page.visibleSeq;
    if (page.events.length < 1000) await new Promise((resolve) => setTimeout(resolve, 2));
  }
})();

const committed = new Map<string, number>();
let tripCounter = 0;
async function writeTxn(client: Kysely<Database>) {
  const ids = Array.from({ length: PER_TXN }, () => `trp_b${tripCounter++}`);
  await sql`INSERT INTO trips (id, agency_id, title, num_days) SELECT unnest(${ids}::text[]), 'agy_bench', 'Bench', 3`.execute(
    client,
  );
  const at = performance.now();
  for (const id of ids) committed.set(id, at);
  return ids;
}

// One connection per writer, as many host-application connections would be.
const clients = Array.from({ length: WRITERS }, () =>
  createDb(t.url, { max: 1, applicationName: 'bench-writer' }),
);

const waitUntil = async (check: () => boolean, timeoutMs = 120_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return performance.now();
};

// 1. Storm.
const stormStart = performance.now();
const stormIds: string[] = [];
await Promise.all(
  clients.map(async (c) => {
    while (tripCounter < STORM_EVENTS) stormIds.push(...(await writeTxn(c)));
  }),
);
const stormWritten = performance.now();
const recordedAt = await waitUntil(() => stormIds.every((id) => visible.has(id)));
const publishedAt = await waitUntil(() => stormIds.every((id) => arrived.has(id)));
const secs = (ms: number) => ms / 1000;
const storm = {
  events: stormIds.length,
  capturedPerSec: stormIds.length / secs(stormWritten - stormStart),
  recordedPerSec: stormIds.length / secs(recordedAt - stormStart),
  publishedPerSec: stormIds.length / secs(publishedAt - stormStart),
};

// 2. Paced load at 500 events/s for latency.
const pacedIds: string[] = [];
const txnsPerSec = PACED_RATE / PER_TXN;
const pacedStart = performance.now();
for (let i = 0; i < txnsPerSec * PACED_SECONDS; i++) {
  const due = pacedStart + (i * 1000) / txnsPerSec;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  pacedIds.push(...(await writeTxn(clients[i % clients.length]!)));
}
await waitUntil(() => pacedIds.every((id) => arrived.has(id) && visible.has(id)));
const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};
const toVisible = pacedIds.map((id) => visible.get(id)! - committed.get(id)!);
const toBroker = pacedIds.map((id) => arrived.get(id)! - committed.get(id)!);

polling = false;
await poller;
recorder.kill('SIGTERM');
await new Promise((resolve) => recorder.once('exit', resolve));
await Promise.all(clients.map((c) => c.destroy()));

// 3. The floor: the same storm, written the same way into bare.trips, relayed by the bare relay,
// which keeps each event in bare.events as the recorder keeps them in events; then, for reference,
// the same relay keeping none (BENCH_RELAY_EVENTS=none), the floor before it kept them.
await createBareSchema(t.url);
let bareCounter = 0;
const bareQueues: string[] = [];
async function bareStorm(name: string, env: Record<string, string>): Promise<number> {
  const bareQueue = `${prefix}${name}`;
  bareQueues.push(bareQueue);
  const relay = startChild(
    name,
    BARE_RELAY,
    { DATABASE_URL: t.url, AMQP_URL: amqpUrl, AMQP_QUEUE: bareQueue, ...env },
    true,
  );
  await relay.next((m) => m.ready === true);
  const bareArrived = new Set<string>();
  await ch.consume(
    bareQueue,
    (msg) => {
      if (!msg) return;
      const body = JSON.parse(msg.content.toString()) as { event: { related_object: { id: string } } };
      bareArrived.add(body.event.related_object.id);
    },
    { noAck: true },
  );
  const bareClients = Array.from({ length: WRITERS }, () =>
    createDb(t.url, { max: 1, applicationName: 'bench-writer' }),
  );
  const first = bareCounter;
  const bareIds: string[] = [];
  const bareStart = performance.now();
  await Promise.all(
    bareClients.map(async (c) => {
      while (bareCounter - first < STORM_EVENTS) {
        const ids = Array.from({ length: PER_TXN }, () => `trp_x${bareCounter++}`);
        await sql`INSERT INTO bare.trips (id, agency_id, title, num_days) SELECT unnest(${ids}::text[]), 'agy_bench', 'Bench', 3`.execute(
          c,
        );
        bareIds.push(...ids);
      }
    }),
  );
  const bareAt = await waitUntil(() => bareIds.every((id) => bareArrived.has(id)));
  await relay.stop();
  await Promise.all(bareClients.map((c) => c.destroy()));
  return bareIds.length / secs(bareAt - bareStart);
}
const bareRelayPerSec = await bareStorm('bare-relay', {});
const keptByBare = await sql<{ n: string }>`SELECT count(*) AS n FROM bare.events`.execute(t.db);
const noEventsRelayPerSec = await bareStorm('bare-relay-no-events', { BENCH_RELAY_EVENTS: 'none' });

// For reference: a bare confirm-channel publisher, same number and size of messages, no database.
const sample = Buffer.from(
  JSON.stringify({
    agency_id: 'agy_bench',
    event: {
      object: 'event',
      id: 'evt_0123456789abcdef',
      type: 'trip.created',
      created_at: new Date().toISOString(),
      related_object: { type: 'trip', id: 'trp_b0', url: '/api/v1/trips/trp_b0' },
      data: {},
    },
  }),
);
const confirm = await conn.createConfirmChannel();
const publisherQueue = `${prefix}publisher`;
await confirm.assertQueue(publisherQueue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
await confirm.bindQueue(publisherQueue, exchange, 'bare.#');
const publisherStart = performance.now();
for (let i = 0; i < stormIds.length; i++) {
  const ok = confirm.publish(exchange, 'bare.trip.created', sample, { persistent: true, messageId: `m${i}` });
  if (!ok) await new Promise((resolve) => confirm.once('drain', resolve));
}
await confirm.waitForConfirms();
const barePerSec = stormIds.length / secs(performance.now() - publisherStart);

await conn.close();
await deleteAmqpObjects({
  queues: [queueName, ...bareQueues, publisherQueue],
  exchanges: [exchange, expressExchange],
});
await t.drop();

const r = (n: number) => Math.round(n);
console.log(
  `machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, ${r(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`,
);
console.log(`storm: ${storm.events} events from ${WRITERS} connections, ${PER_TXN} changes per transaction`);
console.log(`  changes captured     ${r(storm.capturedPerSec)} /s`);
console.log(`  events recorded      ${r(storm.recordedPerSec)} /s (visible in GET /events)`);
console.log(`  events published     ${r(storm.publishedPerSec)} /s (received from the broker)`);
const ratio = storm.publishedPerSec / bareRelayPerSec;
console.log(
  `  bare relay keeping the events (the floor) over the same storm ${r(bareRelayPerSec)} /s, ` +
    `${keptByBare.rows[0]!.n} events kept → recorder/bare relay = ${ratio.toFixed(2)} (target ≥ 0.5: ${ratio >= 0.5 ? 'MET' : 'MISS'})`,
);
console.log(
  `  bare relay keeping no events (the old floor) ${r(noEventsRelayPerSec)} /s → ` +
    `recorder/it = ${(storm.publishedPerSec / noEventsRelayPerSec).toFixed(2)} (for reference)`,
);
console.log(
  `  bare confirm publisher, no database ${r(barePerSec)} /s → recorder/publisher = ${(storm.publishedPerSec / barePerSec).toFixed(2)} (for reference)`,
);
console.log(`paced: ${PACED_RATE} events/s for ${PACED_SECONDS} s (${pacedIds.length} events)`);
console.log(
  `  commit → visible in GET /events  p50 ${r(pct(toVisible, 50))} ms, p99 ${r(pct(toVisible, 99))} ms`,
);
console.log(
  `  commit → received from broker    p50 ${r(pct(toBroker, 50))} ms, p99 ${r(pct(toBroker, 99))} ms`,
);
process.exit(0);
