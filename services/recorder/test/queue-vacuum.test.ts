import { vacuumStats, waitFor } from '@trips/testkit';
import { hostWrite, startTestRecorder, type TestRecorder } from './helpers.ts';

// The recorder vacuums the two tables it drains every QUEUE_VACUUM_INTERVAL, whatever autovacuum
// does (switched off on the machines the tests run on).
let recorder: TestRecorder;
let t: TestRecorder['t'];
let queue: TestRecorder['queue'];
beforeAll(async () => {
  recorder = await startTestRecorder({ QUEUE_VACUUM_INTERVAL: '200ms' });
  ({ t, queue } = recorder);
});
afterAll(async () => {
  await recorder.cleanup();
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
