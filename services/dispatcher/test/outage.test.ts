import {
  adminQuery,
  createTestCa,
  startReceiver,
  waitFor,
  type TestCa,
  type TestReceiver,
} from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// The dispatcher's database goes away while events arrive, then comes back: nothing is lost and
// nothing stays stuck. Only this file's database is cut off, so other files running beside it
// are not disturbed.
let ca: TestCa;
let receiver: TestReceiver;
let d: TestDispatcher;

beforeAll(async () => {
  ca = await createTestCa();
  receiver = await startReceiver(ca);
  d = await startTestDispatcher({ WEBHOOK_CA_FILE: ca.caFile });
});
afterAll(async () => {
  await d?.cleanup();
  await receiver?.close();
});

test('events that arrive while Postgres is unreachable are delivered once it is back', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  await webhookFor(d.db, agencyId, receiver.url, ['trip.created']);
  const name = d.database.name;
  await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  try {
    await adminQuery(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
    const events = Array.from({ length: 5 }, () => makeEvent('trip.created'));
    for (const event of events) await d.publish(agencyId, event);
    await waitFor(
      () =>
        d.logs.text().includes('handling failed while a dependency is away; message kept and tried again'),
      {
        what: 'the dispatcher to meet the outage',
      },
    );
    expect(receiver.requests).toHaveLength(0);
  } finally {
    await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
  }
  await waitFor(() => receiver.requests.length >= 5, { timeoutMs: 20_000, what: 'every event delivered' });
  const ids = new Set(receiver.requests.map((r) => r.headers['service-event-id']));
  expect(ids.size).toBe(5);
});
