import { createTestCa, startReceiver, waitFor, type TestCa, type TestReceiver } from '@trips/testkit';
import type { Event } from '@trips/contracts';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// The statements the dispatcher sends Postgres per batch of deliveries, pinned: each costs a
// round trip on both sides (issue 30), so one more per batch is a regression this catches. With
// the webhooks cached (targets-cache.ts), a batch of attempts to known webhooks sends one
// statement, the attempts' record.

let ca: TestCa;
let d: TestDispatcher;
const receivers: TestReceiver[] = [];
const statements: string[] = [];

/**
 * The mailer looks for owed e-mails every second whatever is delivered; the other loops (switch-off
 * sweep, lane scan, pruning) run at start and then not within these tests, by the settings below.
 */
const delivering = (from: number) => statements.slice(from).filter((text) => !text.includes('owner_notices'));
const named = (text: string) => /^\/\* prepared: ([a-z_]+) \*\//.exec(text)?.[1] ?? text.slice(0, 60);

beforeAll(async () => {
  ca = await createTestCa();
  d = await startTestDispatcher(
    {
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_RETRY_DELAYS: '1s',
      // A sweep every minute, a scan every hour: neither falls inside a test.
      WEBHOOK_FAILURE_WINDOW: '20m',
      DISPATCHER_LANE_SCAN_INTERVAL: '1h',
      // Room for every delivery at once, so none waits in a lane (which would be statements of its own).
      DISPATCHER_ENDPOINT_CONCURRENCY: '100',
      DISPATCHER_INLINE_WAIT: '10s',
    },
    { onStatement: (text) => statements.push(text) },
  );
});

afterAll(async () => {
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

const arrived = (r: TestReceiver, events: Event[]) =>
  events.every((e) => r.requests.some((q) => q.headers['service-event-id'] === e.id));

test('with the webhooks cached, a batch of first attempts sends only the attempts statement', async () => {
  const agencies = await Promise.all(
    [1, 2, 3].map(async () => {
      const { agencyId } = await agencyWithOwners(d.db);
      const r = await receiver();
      await webhookFor(d.db, agencyId, r.url);
      return { agencyId, r };
    }),
  );
  // Warm: each agency's webhooks are read once, and a few attempts open each webhook's slots.
  for (const { agencyId, r } of agencies) {
    for (let i = 0; i < 4; i++) {
      const event = makeEvent();
      await d.publish(agencyId, event);
      await waitFor(() => arrived(r, [event]));
    }
  }
  await waitFor(() => d.outcomes.length === 12, { what: 'the warm-up recorded' });

  const from = statements.length;
  const events = agencies.map(({ agencyId }) => ({
    agencyId,
    events: [1, 2, 3, 4, 5].map(() => makeEvent()),
  }));
  await Promise.all(
    events.flatMap(({ agencyId, events }) => events.map((event) => d.publish(agencyId, event))),
  );
  await waitFor(() => agencies.every(({ r }, i) => arrived(r, events[i]!.events)), {
    what: 'the deliveries',
  });
  await waitFor(() => d.outcomes.length === 12 + 15, { what: 'every attempt recorded' });

  const sent = delivering(from).map(named);
  expect(sent.length).toBeGreaterThan(0);
  expect(sent.length).toBeLessThanOrEqual(15);
  expect(new Set(sent)).toEqual(new Set(['record_attempts']));
});

test('with the webhook cached, a retry sends only its attempt’s statement', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const r = await receiver();
  r.answer = () => ({ status: 500 });
  await webhookFor(d.db, agencyId, r.url);
  const event = makeEvent();
  await d.publish(agencyId, event);
  // The first retry reads the webhook by id; the second finds it kept.
  await waitFor(() => r.requests.length === 2, { what: 'the first retry' });
  await waitFor(() => d.outcomes.filter((o) => o.eventId === event.id).length === 2);
  const from = statements.length;
  await waitFor(() => d.outcomes.filter((o) => o.eventId === event.id).length === 3, {
    what: 'the second retry recorded',
  });
  expect(delivering(from).map(named)).toEqual(['record_attempts']);
});
