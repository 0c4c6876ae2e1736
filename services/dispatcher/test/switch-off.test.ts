import { formatTime, PRODUCT_NAME } from '@trips/contracts';
import { findWebhook, setWebhookEnabled } from '@trips/db/webhooks';
import {
  createTestCa,
  startReceiver,
  startSmtp,
  waitFor,
  type ReceivedMail,
  type TestCa,
  type TestReceiver,
  type TestSmtp,
} from '@trips/testkit';
import {
  agencyWithOwners,
  makeEvent,
  startTestDispatcher,
  webhookFor,
  type TestDispatcher,
} from './support.ts';

// The switch-off policy in seconds (D9): no 2xx for 10 s switches a webhook off, owners are warned
// at a third of that. Two dispatcher replicas run it at once, as in production.
const WINDOW = 10_000;

let ca: TestCa;
let smtp: TestSmtp;
let d: TestDispatcher;
let replica: TestDispatcher;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  ca = await createTestCa();
  smtp = await startSmtp();
  const env = {
    WEBHOOK_CA_FILE: ca.caFile,
    WEBHOOK_RETRY_DELAYS: '1s,2s,3s',
    WEBHOOK_FAILURE_WINDOW: '10s',
    SMTP_URL: smtp.url,
    SETTINGS_URL: 'https://trips.example/settings',
    EVENT_RETENTION: '7d',
  };
  d = await startTestDispatcher(env);
  replica = await startTestDispatcher(env, {}, d);
});

afterAll(async () => {
  await replica?.cleanup();
  await d?.cleanup();
  await Promise.all(receivers.map((r) => r.close()));
  await smtp?.close();
});

async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver(ca);
  receivers.push(r);
  return r;
}

const mailsTo = (address: string, subject: string): ReceivedMail[] =>
  smtp.mails.filter((m) => m.to.includes(address) && m.subject.startsWith(subject));
const outcomes = () => [...d.outcomes, ...replica.outcomes];
const firstFailure = async (webhookId: string) =>
  new Date((await findWebhook(d.db, webhookId))!.failing_since!).getTime();

test('no 2xx for the window: warned at a third, switched off once, one e-mail per owner; a 2xx resets the streak', async () => {
  const a = await agencyWithOwners(d.db, 'Dead Endpoint Tours');
  const b = await agencyWithOwners(d.db, 'Flaky Endpoint Tours');
  const deadReceiver = await receiver();
  deadReceiver.answer = () => ({ status: 500, body: 'down' });
  const healthyReceiver = await receiver();
  const flakyReceiver = await receiver();
  flakyReceiver.answer = () => ({ status: 500 });
  const dead = await webhookFor(d.db, a.agencyId, deadReceiver.url);
  await webhookFor(d.db, a.agencyId, healthyReceiver.url);
  const flaky = await webhookFor(d.db, b.agencyId, flakyReceiver.url);

  await d.publish(a.agencyId, makeEvent());
  await d.publish(b.agencyId, makeEvent());
  const deadSince = await waitFor(
    async () => (await findWebhook(d.db, dead.id))?.failing_since && firstFailure(dead.id),
  );
  const flakySince = await waitFor(
    async () => (await findWebhook(d.db, flaky.id))?.failing_since && firstFailure(flaky.id),
  );

  // Warning: one e-mail to each owner of each failing agency, a third of the window in.
  await waitFor(() => [...a.owners, ...b.owners].every((o) => mailsTo(o, 'Webhook failing').length === 1), {
    timeoutMs: 8_000,
    what: 'the warning e-mails',
  });
  for (const owner of a.owners)
    expect(mailsTo(owner, 'Webhook failing')[0]!.at).toBeGreaterThanOrEqual(deadSince + WINDOW / 3);
  for (const owner of b.owners)
    expect(mailsTo(owner, 'Webhook failing')[0]!.at).toBeGreaterThanOrEqual(flakySince + WINDOW / 3);

  // A delivery that will still be retrying when the switch-off comes.
  const pending = makeEvent();
  await d.publish(a.agencyId, pending);
  // The flaky endpoint recovers: its next retry gets a 2xx, which ends its streak.
  flakyReceiver.answer = () => ({ status: 200 });
  await waitFor(async () => (await findWebhook(d.db, flaky.id))!.failing_since === null, {
    timeoutMs: 8_000,
    what: 'the flaky webhook to succeed',
  });
  expect((await findWebhook(d.db, flaky.id))!.warned_at).toBeNull();

  // Switch-off, measured from the first failure.
  let seenOffAt = new Date();
  const switchedOff = await waitFor(
    async () => {
      const w = await findWebhook(d.db, dead.id);
      seenOffAt = new Date();
      return w?.disabled_at ? w : undefined;
    },
    { timeoutMs: 15_000, what: 'the switch-off' },
  );
  expect(switchedOff.disabled_reason).toBe('failing');
  expect(new Date(switchedOff.disabled_at!).getTime()).toBeGreaterThanOrEqual(deadSince + WINDOW);
  expect(switchedOff.epoch).toBe(2);

  // Its pending retries are dropped, not attempted.
  await waitFor(
    () =>
      outcomes().some(
        (o) => o.eventId === pending.id && o.webhookId === dead.id && o.outcome.kind === 'dropped',
      ),
    { timeoutMs: 10_000, what: 'the pending retry to be dropped' },
  );
  // None starts once the switch-off is visible. (disabled_at is the start of the transaction that
  // switched it off: an attempt whose webhook was read before that transaction committed may start
  // after disabled_at, already under way, as one did in a CI run.)
  const attemptsAfterOff = await d.db
    .selectFrom('webhook_attempts')
    .select('id')
    .where('webhook_id', '=', dead.id)
    .where('attempted_at', '>', seenOffAt)
    .execute();
  expect(attemptsAfterOff).toHaveLength(0);

  // Nothing new is delivered to it; the agency's other webhook shows the event went out.
  const later = makeEvent();
  await d.publish(a.agencyId, later);
  await waitFor(() => healthyReceiver.requests.some((r) => r.headers['service-event-id'] === later.id));
  expect(deadReceiver.requests.some((r) => r.headers['service-event-id'] === later.id)).toBe(false);

  // Exactly one e-mail of each kind per owner, though two dispatchers enforce the policy; the
  // planner gets none; the recovered webhook's owners got the warning only. The mailer sends
  // from its outbox on its own clock: wait for the e-mails, then a little longer for a duplicate.
  await waitFor(() => a.owners.every((owner) => mailsTo(owner, 'Webhook switched off').length > 0), {
    timeoutMs: 10_000,
    what: 'the switch-off e-mails',
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const mail = mailsTo(a.owners[0]!, 'Webhook switched off');
  expect(mail).toHaveLength(1);
  for (const owner of a.owners) {
    expect(mailsTo(owner, 'Webhook switched off')).toHaveLength(1);
    expect(mailsTo(owner, 'Webhook failing')).toHaveLength(1);
  }
  for (const owner of b.owners) expect(mailsTo(owner, 'Webhook switched off')).toHaveLength(0);
  expect(smtp.mails.filter((m) => m.to.some((t) => t.startsWith('planner-')))).toHaveLength(0);
  expect((await findWebhook(d.db, flaky.id))!.disabled_at).toBeNull();

  // The e-mail names the webhook, since when it fails, the last error and how to switch it on.
  const text = mail[0]!.raw.replace(/=\r?\n/g, '');
  expect(text).toContain(dead.id);
  expect(text).toContain(deadReceiver.url);
  // Times and the product's name as everywhere people read them (docs/wording.md).
  expect(text).toContain(formatTime(new Date(deadSince)));
  // The signature separator "-- " (its space quoted-printable: =20), then the name.
  expect(text).toMatch(new RegExp(`^--(=20| )\r?\n${PRODUCT_NAME}\r?$`, 'm'));
  // The last error as the settings page says it for that attempt, never the failure class.
  const lastError = 'Last error: answered 500 Internal Server Error: only a 2xx answer counts as delivered.';
  expect(text).toContain(lastError);
  expect(text).not.toContain('http_status');
  const warning = mailsTo(a.owners[0]!, 'Webhook failing')[0]!.raw.replace(/=\r?\n/g, '');
  expect(warning).toContain(lastError);
  // When it will be switched off, unless a 2xx comes first.
  expect(warning).toContain(`by ${formatTime(new Date(deadSince + WINDOW))}`);
  expect(warning).not.toContain('http_status');
  expect(text).toContain(`tripctl webhook enable --id ${dead.id}`);
  expect(text).toContain('https://trips.example/settings');
  expect(text).toContain('keeps every event for 7 days'); // EVENT_RETENTION, not a fixed 30
  expect(text).not.toContain(dead.secret);

  // The metric agrees: one switch-off between the two replicas.
  const switchOffs = async (x: TestDispatcher) => {
    const text = await (await fetch(`http://127.0.0.1:${x.service.healthPort}/metrics`)).text();
    return Number(/^trips_webhooks_switched_off_total\{service="dispatcher"\} (\d+)$/m.exec(text)![1]);
  };
  expect((await switchOffs(d)) + (await switchOffs(replica))).toBe(1);

  // Switched back on (an owner's action) with a fresh streak, it gets events again: from the first
  // event after both replicas heard of it.
  deadReceiver.answer = () => ({ status: 200 });
  const enabled = await d.changeHeard(a.agencyId, () =>
    replica.changeHeard(a.agencyId, () => setWebhookEnabled(d.db, dead.id, true)),
  );
  expect(enabled).toMatchObject({ disabled_at: null, failing_since: null, warned_at: null });
  const afterEnable = makeEvent();
  await d.publish(a.agencyId, afterEnable);
  await waitFor(() => deadReceiver.requests.some((r) => r.headers['service-event-id'] === afterEnable.id));
});
