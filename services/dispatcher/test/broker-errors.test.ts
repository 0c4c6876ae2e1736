import { fileURLToPath } from 'node:url';
import { queueNames, topology } from '@trips/broker';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  onAmqpChannel,
  randomAmqpPrefix,
  startReceiver,
  startServiceProcess,
  waitFor,
  waitForChannelRefusals,
  type ServiceProcess,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { readConfig } from '../src/index.ts';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// What RabbitMQ does to a channel by itself, while the connection stays up: refuse a declaration
// (406, a queue that exists with other arguments) or cancel the consumer (its queue deleted). The
// dispatcher logs it, stays up, and consumes again on a new channel a few seconds later.

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
let ca: TestCa;
let receiver: TestReceiver;

beforeAll(async () => {
  ca = await createTestCa();
  receiver = await startReceiver(ca);
});
afterAll(async () => {
  await receiver?.close();
});

const delivered = (eventId: string) =>
  receiver.requests.some((r) => r.headers['service-event-id'] === eventId);

describe('a queue that exists with other arguments', () => {
  let t: TestDatabase;
  let prefix: string;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    t = await createTestDatabase();
    prefix = randomAmqpPrefix();
  });
  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await deleteAmqpObjects({
      queues: queueNames(topology(prefix, readConfig({}).policy.queueDelaysMs)),
      exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`],
    });
    await t.drop();
  });

  test('the dispatcher process logs the refused declaration, stays up (alive, not ready), and consumes once the queue is fixed', async () => {
    const names = topology(prefix, readConfig({}).policy.queueDelaysMs);
    // A plain classic queue where the dispatcher declares a quorum one that dead-letters: RabbitMQ
    // answers 406 PRECONDITION_FAILED "inequivalent arg" and closes the declaring channel.
    await onAmqpChannel((ch) => ch.assertQueue(names.eventsQueue, { durable: true }));

    service = startServiceProcess(main, {
      DATABASE_URL: t.url,
      AMQP_URL: amqpUrl,
      AMQP_PREFIX: prefix,
      DISPATCHER_HEALTH_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
      LOG_LEVEL: 'info',
    });
    const running = service;
    // The port the child chose (0: any free one), from its log line: a port picked here and
    // handed over could be taken by another test file in between.
    const healthPort = () => /"healthPort":(\d+),"msg":"health port open"/.exec(running.output)?.[1];
    const probe = async (path: string) => (await fetch(`http://127.0.0.1:${healthPort()}${path}`)).status;

    // Each consumer's setup is refused, and tried again on a new channel after a pause.
    await waitForChannelRefusals(running, 4);
    expect({ exitCode: running.exitCode, output: running.output }).toEqual({
      exitCode: undefined,
      output: expect.any(String),
    });
    expect(running.output).toContain('PRECONDITION_FAILED - inequivalent arg');
    expect(running.output).toContain('RabbitMQ closed the channel');
    expect(running.output).not.toContain('    at '); // a log line with the message, never a stack trace
    expect(running.output).not.toContain('dispatcher started');
    expect(healthPort()).toBeDefined();
    // Alive, so Kubernetes does not restart it into the same refusal; not ready, so it gets no
    // traffic and the refusal shows.
    expect({ live: await probe('/healthz'), ready: await probe('/readyz') }).toEqual({
      live: 200,
      ready: 503,
    });

    await onAmqpChannel((ch) => ch.deleteQueue(names.eventsQueue));
    await waitFor(() => running.exitCode !== undefined || running.output.includes('dispatcher started'), {
      timeoutMs: 20_000,
      what: 'the dispatcher started once the queue was deleted',
    });
    expect(running.exitCode).toBeUndefined();
    expect(await probe('/readyz')).toBe(200);

    const { agencyId } = await agencyWithOwners(t.db);
    await webhookFor(t.db, agencyId, receiver.url);
    const event = makeEvent('trip.created');
    await onAmqpChannel(async (ch) => {
      const message = { agency_id: agencyId, event };
      ch.publish(names.eventsExchange, event.type, Buffer.from(JSON.stringify(message)), {
        persistent: true,
        messageId: event.id,
      });
      await ch.waitForConfirms();
    });
    await waitFor(() => delivered(event.id), { what: 'the delivery' });
  }, 60_000);
});

describe('a consumer that RabbitMQ cancels', () => {
  let d: TestDispatcher;

  beforeAll(async () => {
    d = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile });
  });
  afterAll(async () => {
    await d?.cleanup();
  });

  const readyz = async () => (await fetch(`http://127.0.0.1:${d.service.healthPort}/readyz`)).status;

  test('its queue deleted: not ready while it is not consuming, then consuming again on a declared queue', async () => {
    const { agencyId } = await agencyWithOwners(d.db);
    await webhookFor(d.db, agencyId, receiver.url);
    expect(await readyz()).toBe(200);

    const names = topology(d.prefix, readConfig({ WEBHOOK_RETRY_DELAYS: '1s,2s,3s' }).policy.queueDelaysMs);
    await onAmqpChannel((ch) => ch.deleteQueue(names.eventsQueue));

    await waitFor(async () => (await readyz()) === 503, { what: '/readyz to say not ready' });
    expect(d.logs.text()).toContain('RabbitMQ cancelled the consumer');
    // A scrape meanwhile checks the missing queue, which makes RabbitMQ close the metrics channel:
    // the other metrics still answer, and the queue's depth is back once it is declared again.
    const metrics = async () => {
      const response = await fetch(`http://127.0.0.1:${d.service.healthPort}/metrics`);
      return { status: response.status, text: await response.text() };
    };
    expect((await metrics()).status).toBe(200);
    await waitFor(async () => (await readyz()) === 200, { timeoutMs: 20_000, what: '/readyz ready again' });
    await waitFor(async () => (await metrics()).text.includes('trips_queue_depth{queue="events"'), {
      timeoutMs: 20_000,
      what: "the events queue's depth in /metrics again",
    });

    const event = makeEvent('trip.created');
    await d.publish(agencyId, event);
    await waitFor(() => delivered(event.id), { what: 'the delivery after the consumer came back' });
  }, 60_000);
});
