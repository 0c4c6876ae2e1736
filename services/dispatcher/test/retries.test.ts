import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { WebhookAttemptRow } from '@trips/db';
import { listWebhookAttempts } from '@trips/db/webhook-attempts';
import { createTestCa, startReceiver, waitFor, type TestCa, type TestReceiver } from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// Retry timing in seconds by configuration (D9): 1s, 2s, then 3s repeating, for 10 s after the
// first failure; each attempt may take 1 s.
const DELAYS = [1_000, 2_000, 3_000];
const WINDOW = 10_000;
const TIMEOUT = 1_000;

let ca: TestCa;
let d: TestDispatcher;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  ca = await createTestCa();
  d = await startTestDispatcher({
    WEBHOOK_CA_FILE: ca.caFile,
    WEBHOOK_RETRY_DELAYS: '1s,2s,3s',
    WEBHOOK_FAILURE_WINDOW: '10s',
    WEBHOOK_TIMEOUT: '1s',
  });
});

afterAll(async () => {
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(tls: { key: string; cert: string } = ca): Promise<TestReceiver> {
  const r = await startReceiver(tls);
  receivers.push(r);
  return r;
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * What the schedule allows, computed independently from the attempts as they happened: after the
 * n-th failure the next attempt waits DELAYS[n-1] (the last repeating), counted from when the
 * failure was known, and only while it still starts within WINDOW of the first failure.
 */
function checkSchedule(attempts: WebhookAttemptRow[]): void {
  const starts = attempts.map((a) => new Date(a.attempted_at).getTime());
  const first = starts[0]!;
  attempts.forEach((a, i) => expect(a.attempt).toBe(i + 1));
  for (let i = 0; i + 1 < attempts.length; i++) {
    const delay = DELAYS[Math.min(i, DELAYS.length - 1)]!;
    const failedKnownAt = starts[i]! + attempts[i]!.duration_ms;
    const gap = starts[i + 1]! - failedKnownAt;
    // Never early; late only by the broker's dead-letter hop and our own handling.
    expect(gap).toBeGreaterThanOrEqual(delay - 50);
    expect(gap).toBeLessThan(delay + 1_500);
  }
  // The attempt after the last would have started outside the window: that is why it stopped.
  const last = attempts.length - 1;
  const nextDelay = DELAYS[Math.min(last, DELAYS.length - 1)]!;
  expect(starts[last]! + nextDelay).toBeGreaterThan(first + WINDOW);
  // And the last was due within it (it may start later, by the hop and handling allowed above).
  const lastDue =
    starts[last - 1]! + attempts[last - 1]!.duration_ms + DELAYS[Math.min(last - 1, DELAYS.length - 1)]!;
  expect(lastDue - first).toBeLessThanOrEqual(WINDOW + 50);
}

test('non-2xx, timeout, redirect, connection refused and TLS failure are each retried on the schedule, then given up', async () => {
  const { agencyId } = await agencyWithOwners(d.db);
  const status500 = await receiver();
  status500.answer = () => ({ status: 500, body: 'database is down' });
  const slow = await receiver();
  slow.answer = () => ({ status: 200, delayMs: TIMEOUT * 3 });
  const target = await receiver();
  const redirecting = await receiver();
  redirecting.answer = () => ({ status: 302, headers: { location: target.url } });
  const untrusted = await receiver(ca.untrusted);

  const cases = {
    http_status: await webhookFor(d.db, agencyId, status500.url),
    timeout: await webhookFor(d.db, agencyId, slow.url),
    redirect: await webhookFor(d.db, agencyId, redirecting.url),
    connection_refused: await webhookFor(d.db, agencyId, `https://localhost:${await closedPort()}/hooks`),
    tls: await webhookFor(d.db, agencyId, untrusted.url),
  };
  const event = makeEvent();
  await d.publish(agencyId, event);

  // Each delivery ends by giving up once the window has passed (about 10 s from now).
  await waitFor(
    () =>
      Object.values(cases).every((w) =>
        d.outcomes.some((o) => o.webhookId === w.id && o.outcome.kind === 'gave_up'),
      ),
    { timeoutMs: 25_000, intervalMs: 200, what: 'every delivery to give up' },
  );

  for (const [error, webhook] of Object.entries(cases)) {
    const attempts = (await listWebhookAttempts(d.db, webhook.id)).reverse();
    expect(attempts.length).toBeGreaterThanOrEqual(4);
    for (const a of attempts) {
      expect(a).toMatchObject({ event_id: event.id, succeeded: false, error });
    }
    checkSchedule(attempts);
  }
  // Specific details of each failure class.
  const [first500] = (await listWebhookAttempts(d.db, cases.http_status.id)).reverse();
  expect(first500).toMatchObject({ status_code: 500, response_body: 'database is down' });
  const [firstRedirect] = await listWebhookAttempts(d.db, cases.redirect.id);
  expect(firstRedirect!.status_code).toBe(302);
  for (const a of await listWebhookAttempts(d.db, cases.timeout.id)) {
    expect(a.duration_ms).toBeGreaterThanOrEqual(TIMEOUT - 50);
    expect(a.duration_ms).toBeLessThan(TIMEOUT + 1_000);
  }
  // Redirects are never followed, and the slow endpoint's late answers did not count.
  expect(target.requests).toHaveLength(0);
  expect(redirecting.requests.length).toBe((await listWebhookAttempts(d.db, cases.redirect.id)).length);
  // Every attempt carried the same event id (D7).
  expect(new Set(status500.requests.map((r) => r.headers['service-event-id']))).toEqual(new Set([event.id]));
});
