import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  stopBroker,
  waitFor,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';
import { hostWrite, silent, sleep } from './helpers.ts';

// RabbitMQ stopped mid-stream (rabbitmqctl stop_app) and brought back: the recorder reconnects
// and publishes everything recorded meanwhile. The broker is started again even when the test fails.

let t: TestDatabase;
let prefix: string;
let queue: TestQueue;
let service: RecorderService;
beforeAll(async () => {
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  queue = await collectEvents(prefix);
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_B', 'Broker')`);
  service = await startRecorderService(
    readConfig({
      DATABASE_URL: t.url,
      AMQP_URL: amqpUrl,
      AMQP_PREFIX: prefix,
      RECORDER_HEALTH_PORT: '0',
      RECORDER_PUBLISH_TIMEOUT: '2s',
    }),
    silent,
  );
});
afterAll(async () => {
  await service.stop();
  await queue.close();
  await deleteAmqpObjects({ exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`] });
  await t.drop();
});

test('a broker restart mid-stream is survived: everything is published once it is back', async () => {
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
  const startBroker = await stopBroker();
  try {
    await write(20, 60);
    await sleep(1_000);
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
}, 120_000);
