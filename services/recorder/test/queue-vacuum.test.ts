import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  vacuumStats,
  waitFor,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';
import { hostWrite, silent } from './helpers.ts';

// The recorder vacuums the two tables it drains every QUEUE_VACUUM_INTERVAL, whatever autovacuum
// does (switched off on the machines the tests run on).
let t: TestDatabase;
let prefix: string;
let queue: TestQueue;
let service: RecorderService;
beforeAll(async () => {
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  queue = await collectEvents(prefix);
  service = await startRecorderService(
    readConfig({
      DATABASE_URL: t.url,
      AMQP_URL: amqpUrl,
      AMQP_PREFIX: prefix,
      RECORDER_HEALTH_PORT: '0',
      QUEUE_VACUUM_INTERVAL: '200ms',
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

test('outbox and events_unpublished are vacuumed on the interval, and their dead rows go', async () => {
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_V', 'Vacuum')`);
  const start = await Promise.all([vacuumStats(t.db, 'outbox'), vacuumStats(t.db, 'events_unpublished')]);
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) SELECT 'trp_v' || i, 'agy_V', 'T', 1 FROM generate_series(1, 50) i`,
  );
  await waitFor(() => queue.messages.length >= 50, { what: '50 events published' });

  // Two rounds after the takes deleted their rows: each ran on its own, the interval apart.
  await waitFor(
    async () => {
      const [outbox, unpublished] = await Promise.all([
        vacuumStats(t.db, 'outbox'),
        vacuumStats(t.db, 'events_unpublished'),
      ]);
      return (
        outbox.count >= start[0].count + 2 && unpublished.count >= start[1].count + 2 && outbox.dead === 0
      );
    },
    { what: 'both queue tables vacuumed twice more, outbox left with no dead rows' },
  );
});
