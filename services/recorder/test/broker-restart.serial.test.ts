import {
  collectEvents,
  createTestDatabase,
  LocalRabbitCluster,
  LogCapture,
  rabbitmqInstalled,
  randomAmqpPrefix,
  waitFor,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';
import { hostWrite, sleep } from './helpers.ts';

// RabbitMQ stopped mid-stream (rabbitmqctl stop_app) and brought back: the recorder reconnects
// and publishes everything recorded meanwhile. The broker is a node of the file's own (the
// machine's is never stopped), removed afterwards; without RabbitMQ installed (services in
// containers) the test is skipped, saying so.

if (!rabbitmqInstalled) console.warn('broker restart test skipped: no RabbitMQ installed on this machine');
let broker: LocalRabbitCluster;
let t: TestDatabase;
let queue: TestQueue;
let service: RecorderService;
const logs = new LogCapture('recorder');
beforeAll(async () => {
  if (!rabbitmqInstalled) return;
  broker = await LocalRabbitCluster.up({ nodes: 1 });
  t = await createTestDatabase();
  const prefix = randomAmqpPrefix();
  queue = await collectEvents(prefix, broker.urls[0]);
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_B', 'Broker')`);
  service = await startRecorderService(
    readConfig({
      DATABASE_URL: t.url,
      AMQP_URL: broker.urls[0]!,
      AMQP_PREFIX: prefix,
      RECORDER_HEALTH_PORT: '0',
      RECORDER_PUBLISH_TIMEOUT: '2s',
    }),
    logs.logger,
  );
}, 180_000);
afterAll(async () => {
  await service?.stop();
  await queue?.close();
  await broker?.down();
  await t?.drop();
}, 180_000);

const brokerTest = rabbitmqInstalled ? test : test.skip;

brokerTest(
  'a broker restart mid-stream is survived: everything is published once it is back',
  async () => {
    const write = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        await hostWrite(
          t.db,
          `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_b${i}', 'agy_B', 'T', 3)`,
        );
        await sleep(10);
      }
    };
    await write(0, 20);
    const startBroker = await broker.stopApp(1);
    try {
      await write(20, 60);
      await sleep(1_000);
      // The outage is real: the recorder lost its connection.
      await waitFor(() => logs.text().includes('disconnected from RabbitMQ'), { what: 'the disconnect' });
    } finally {
      await startBroker();
    }
    await write(60, 80);
    await waitFor(async () => new Set(queue.messages.map((m) => m.messageId)).size >= 80, {
      timeoutMs: 60_000,
      what: 'all 80 events on the broker',
    });
    // Read after the wait: the last writes are recorded on the recorder's next poll.
    const ids = (await t.db.selectFrom('events').select('id').execute()).map((e) => e.id);
    expect(ids).toHaveLength(80);
    expect(new Set(queue.messages.map((m) => m.messageId))).toEqual(new Set(ids));
    await waitFor(
      async () => (await t.db.selectFrom('events_unpublished').select('seq').execute()).length === 0,
    );
    // ...and it connected again once the node's application was back.
    expect(logs.text().split('connected to RabbitMQ').length - 1).toBeGreaterThanOrEqual(2);
  },
  120_000,
);
