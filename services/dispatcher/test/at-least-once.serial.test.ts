import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { queueNames, topology } from '@trips/broker';
import type { EventMessage } from '@trips/contracts';
import {
  amqpUrl,
  onAmqpChannel,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  LocalRabbitCluster,
  rabbitmqInstalled,
  randomAmqpPrefix,
  startReceiver,
  verifySignature,
  waitFor,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { readConfig } from '../src/index.ts';
import { agencyWithOwners, makeEvent, webhookFor } from './support.ts';

// The dispatcher as its own process, killed with SIGKILL mid-delivery and cut off by a RabbitMQ
// restart: every event still reaches the webhook at least once. The broker is a node of the file's
// own, which the first test stops and starts (the machine's is never stopped); without RabbitMQ
// installed (services in containers) that test is skipped and the others use the run's broker.
// Serial: the node's start and the processes take the machine's cores for a while.

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
let ca: TestCa;
let t: TestDatabase;
let prefix: string;
let receiver: TestReceiver;
let broker: LocalRabbitCluster | undefined;
let url = amqpUrl;
const children = new Set<ChildProcess>();
const brokerTest = rabbitmqInstalled ? test : test.skip;

beforeAll(async () => {
  ca = await createTestCa();
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  receiver = await startReceiver(ca);
  if (rabbitmqInstalled) {
    broker = await LocalRabbitCluster.up({ nodes: 1 });
    url = broker.urls[0]!;
  }
}, 180_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await receiver.close();
  await deleteAmqpObjects(
    {
      // WEBHOOK_RETRY_DELAYS as set below.
      queues: queueNames(
        topology(prefix, readConfig({ WEBHOOK_RETRY_DELAYS: '500ms' }).policy.queueDelaysMs),
      ),
      exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`],
    },
    url,
  );
  await broker?.down();
  await t.drop();
}, 180_000);

function startDispatcher(): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      AMQP_URL: url,
      AMQP_PREFIX: prefix,
      DISPATCHER_HEALTH_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_RETRY_DELAYS: '500ms',
      WEBHOOK_FAILURE_WINDOW: '5m',
      WEBHOOK_TIMEOUT: '3s',
      DISPATCHER_STOP_TIMEOUT: '8s',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return { child, exited, output: () => output };
}

async function publishAll(agencyId: string, count: number) {
  const events = Array.from({ length: count }, () => makeEvent('trip.created'));
  await onAmqpChannel(async (channel) => {
    await channel.assertExchange(`${prefix}trips.events`, 'topic', { durable: true });
    for (const event of events) {
      const message: EventMessage = { agency_id: agencyId, event };
      channel.publish(`${prefix}trips.events`, event.type, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        messageId: event.id,
      });
    }
    await channel.waitForConfirms();
  }, url);
  return events;
}

const heldCount = async () => (await t.db.selectFrom('held_deliveries').select('id').execute()).length;

const receivedIds = () => new Set(receiver.requests.map((r) => String(r.headers['service-event-id'])));

brokerTest(
  'kill -9 mid-delivery and a broker restart: every event delivered at least once, signed',
  async () => {
    const { agencyId } = await agencyWithOwners(t.db);
    const { secret } = await webhookFor(t.db, agencyId, receiver.url);
    // Slow answers keep deliveries in flight, so the kill lands mid-delivery.
    receiver.answer = () => ({ status: 200, delayMs: 100 });

    const first = startDispatcher();
    await waitFor(() => first.output().includes('dispatcher started'), { what: 'the first dispatcher' });
    const events = await publishAll(agencyId, 150);

    await waitFor(() => receivedIds().size >= 30, { timeoutMs: 20_000, what: 'the first deliveries' });
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull(); // killed, no clean exit
    expect(receivedIds().size).toBeLessThan(events.length);
    // Most of the burst waited in the webhook's lane, some of it claimed by the killed dispatcher:
    // those claims expire and the second dispatcher takes them.
    expect(await heldCount()).toBeGreaterThan(0);

    const second = startDispatcher();
    await waitFor(() => second.output().includes('dispatcher started'), { what: 'the second dispatcher' });
    await waitFor(() => receivedIds().size >= 80, { timeoutMs: 30_000, what: 'more deliveries' });

    const startBroker = await broker!.stopApp(1);
    try {
      await waitFor(() => second.output().includes('disconnected from RabbitMQ'), { what: 'the disconnect' });
    } finally {
      await startBroker();
    }
    // The dispatcher reconnects to the node once its application runs again.
    await waitFor(() => second.output().split('connected to RabbitMQ').length - 1 >= 2, {
      what: 'the reconnect',
    });

    await waitFor(() => events.every((e) => receivedIds().has(e.id)), {
      timeoutMs: 60_000,
      intervalMs: 100,
      what: 'every event at the webhook',
    });
    for (const request of receiver.requests) expect(verifySignature(request, secret)).toBe(true);
    await waitFor(async () => (await heldCount()) === 0, { what: 'an empty lane' });

    // SIGTERM: a clean stop within the deadline.
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  },
  180_000,
);

test('SIGTERM lets the deliveries in flight finish and records them', async () => {
  const { agencyId } = await agencyWithOwners(t.db, 'Graceful Tours');
  const slow = await startReceiver(ca);
  try {
    slow.answer = () => ({ status: 200, delayMs: 1_500 });
    const { id: webhookId } = await webhookFor(t.db, agencyId, slow.url, ['trip.created']);
    const dispatcher = startDispatcher();
    await waitFor(() => dispatcher.output().includes('dispatcher started'), { what: 'the dispatcher' });
    await publishAll(agencyId, 3);
    await waitFor(() => slow.requests.length === 3, { what: 'three deliveries in flight' });

    dispatcher.child.kill('SIGTERM');
    expect(await dispatcher.exited).toBe(0);
    // Their answers came after the signal, and each was recorded as a success before the exit.
    const attempts = await t.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .execute();
    expect(attempts).toHaveLength(3);
    expect(attempts.every((a) => a.succeeded && a.duration_ms >= 1_400)).toBe(true);
  } finally {
    await slow.close();
  }
}, 60_000);

test('kill -9 while a webhook is paused: nothing lost, and the pause kept for its time, no longer', async () => {
  const { agencyId } = await agencyWithOwners(t.db, 'Paused Tours');
  const limited = await startReceiver(ca);
  try {
    // The first attempt is refused: wait 3 s. Everything after is taken.
    limited.answer = () =>
      limited.requests.length === 1 ? { status: 429, headers: { 'retry-after': '3' } } : {};
    const { id: webhookId } = await webhookFor(t.db, agencyId, limited.url, ['trip.created']);
    const first = startDispatcher();
    await waitFor(() => first.output().includes('dispatcher started'), { what: 'the first dispatcher' });
    const events = await publishAll(agencyId, 20);
    const paused = await waitFor(
      () =>
        t.db
          .selectFrom('webhook_pace')
          .select('paused_until')
          .where('webhook_id', '=', webhookId)
          .where('paused_until', 'is not', null)
          .executeTakeFirst(),
      { what: 'the pause stored' },
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    const refusedAt = limited.requests[0]!.at;

    const second = startDispatcher();
    await waitFor(() => second.output().includes('dispatcher started'), { what: 'the second dispatcher' });
    const ids = () => new Set(limited.requests.slice(1).map((r) => String(r.headers['service-event-id'])));
    await waitFor(() => events.every((e) => ids().has(e.id)), {
      timeoutMs: 30_000,
      what: 'every event delivered after the pause',
    });
    const after = limited.requests.slice(1).map((r) => r.at - refusedAt);
    // Not one attempt before the pause the receiver asked for ended...
    expect(Math.min(...after)).toBeGreaterThanOrEqual(2_990);
    // ...and the new dispatcher did not wait much longer than that (a lane scan, a claim).
    expect(Math.min(...after)).toBeLessThan(3_000 + 2_000);
    expect(paused.paused_until!.getTime() - refusedAt).toBeGreaterThanOrEqual(2_900);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  } finally {
    await limited.close();
  }
}, 90_000);
