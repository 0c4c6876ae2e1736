import { vacuumStats, waitFor } from '@trips/testkit';
import { startTestDispatcher, type TestDispatcher } from './support.ts';

// The dispatcher vacuums the lanes' table every QUEUE_VACUUM_INTERVAL, whatever autovacuum does
// (switched off on the machines the tests run on): claims release their rows within moments.
let dispatcher: TestDispatcher;
beforeAll(async () => {
  dispatcher = await startTestDispatcher({ QUEUE_VACUUM_INTERVAL: '200ms' });
});
afterAll(async () => {
  await dispatcher.cleanup();
});

test('held_deliveries is vacuumed on the interval', async () => {
  const start = await vacuumStats(dispatcher.db, 'held_deliveries');
  const began = Date.now();
  await waitFor(async () => (await vacuumStats(dispatcher.db, 'held_deliveries')).count >= start.count + 3, {
    what: 'held_deliveries vacuumed three more times',
  });
  // Three rounds the interval apart, not back to back.
  expect(Date.now() - began).toBeGreaterThanOrEqual(2 * 200);
});
