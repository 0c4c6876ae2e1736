import { join } from 'node:path';
import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { queueNames, topology } from '@trips/broker';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { ensureEventPartitions } from '@trips/db/events';
import { readConfig, startDispatcherService, type DispatcherService } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  randomAmqpPrefix,
  startReceiver,
  verifySignature,
  waitFor,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { launchChromium, SHOTS, withChromium } from './browser-support.ts';
import { agencyWithPeople, PASSWORD, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// The settings page in a real browser (Debian's Chromium through playwright-core), against the
// real API, dispatcher, RabbitMQ and Postgres, delivering to a local HTTPS receiver. The tests run
// in order as one owner's session: sign in, create a key and a webhook, see a delivery in the log,
// rotate the secret, switch a failing webhook back on; then a planner is refused. Screenshots go to
// test/artifacts/settings/.

const WINDOW = '3s';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let dispatcher: DispatcherService;
let receiver: TestReceiver;
let browser: Browser;
let page: Page;
let people: People;
const prefix = randomAmqpPrefix();
let webhookId = '';
let firstSecret = '';

beforeAll(async () => {
  t = await createTestDatabase();
  const ca = await createTestCa();
  receiver = await startReceiver(ca);
  const config = readConfig({
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    DISPATCHER_HEALTH_PORT: '0',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_CA_FILE: ca.caFile,
    WEBHOOK_RETRY_DELAYS: '1s',
    WEBHOOK_FAILURE_WINDOW: WINDOW,
    WEBHOOK_TIMEOUT: '2s',
    DISPATCHER_STOP_TIMEOUT: '5s',
  });
  dispatcher = await startDispatcherService(config, new LogCapture().logger);
  api = await startTestApi(t, { AMQP_PREFIX: prefix, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  people = await agencyWithPeople(t.db, 'Fairway Tours');
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await dispatcher?.stop();
  await receiver?.close();
  const names = topology(prefix, [1000]);
  await deleteAmqpObjects({
    queues: queueNames(names),
    exchanges: [names.eventsExchange, names.expressExchange],
  });
  await t?.drop();
});

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Every visible form control has a label a screen reader announces. */
async function expectAllControlsLabelled() {
  const unlabelled = await page.$$eval('input:not([type=hidden]), select, textarea', (controls) =>
    controls
      .filter(
        (c) =>
          (c as unknown as { labels: { length: number } }).labels.length === 0 &&
          !c.getAttribute('aria-label'),
      )
      .map((c) => c.outerHTML),
  );
  expect(unlabelled).toEqual([]);
}

/** Presses a button of the webhook page and waits for the page its form redirects to. */
async function press(button: string, notice: string) {
  await Promise.all([
    page.waitForURL(`**/settings/webhooks/${webhookId}?notice=${notice}`),
    page.getByRole('button', { name: button }).click(),
  ]);
}

/** Reloads the page until `text` shows (the page has no script; an owner reloads too). */
async function reloadUntil(text: string, what: string) {
  await waitFor(
    async () => {
      await page.reload();
      return (await page.getByText(text, { exact: true }).count()) > 0 ? true : null;
    },
    { timeoutMs: 30_000, intervalMs: 500, what },
  );
}

withChromium(
  'an owner signs in with the keyboard alone',
  async () => {
    await page.goto(`${api.url}/settings`);
    expect(page.url()).toBe(`${api.url}/settings/sign-in`);
    await shot('01-sign-in');
    await page.getByLabel('E-mail').focus();
    await page.keyboard.type(people.owner.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API settings', level: 1 }).waitFor();
    expect(page.url()).toBe(`${api.url}/settings`);
    await expect(page.getByText('Fairway Tours').first().isVisible()).resolves.toBe(true);
    await expectAllControlsLabelled();
    await shot('02-overview-empty');
  },
  30_000,
);

withChromium(
  'the owner creates a key, shown once, that works on the API',
  async () => {
    const create = page.locator('form[action="/settings/keys"]');
    await create.getByLabel('Name').fill('Booking sync');
    await create.getByRole('group', { name: 'Scopes' }).getByLabel('events:read').check();
    await create.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
    // Post/redirect/get: the key is on a page of its own, which a reload does not show again.
    expect(page.url()).toMatch(/\/settings\/shown-once\/[\w-]+$/);
    const key = (await page.locator('output').textContent())!.trim();
    await shot('03-key-shown-once');
    const events = await fetch(`${api.url}/api/v1/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(events.status).toBe(200);
    await page.reload();
    await page.getByRole('heading', { name: 'Already shown' }).waitFor();
    expect(await page.content()).not.toContain(key);
    await shot('03b-key-not-shown-again');
    expect(await t.db.selectFrom('api_keys').select('id').execute()).toHaveLength(1);

    await page.goto(`${api.url}/settings`);
    const row = page.getByRole('row', { name: /Booking sync/ });
    await row.waitFor();
    expect(await page.content()).not.toContain(key);
  },
  30_000,
);

withChromium(
  'the owner adds a webhook, sends a test event and sees the delivery in the log',
  async () => {
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Description').fill('Our CRM');
    await page.getByLabel('Rate limit').fill('20');
    // Events are grouped by object; "All events" takes every type.
    const events = page.getByRole('group', { name: 'Events to send' });
    await expect(
      events.getByRole('group', { name: 'Payments' }).getByLabel('payment.paid').count(),
    ).resolves.toBe(1);
    await events.getByLabel('All events').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByRole('heading', { name: 'Your new webhook' }).waitFor();
    firstSecret = (await page.locator('output[aria-label="Signing secret"]').textContent())!.trim();
    await shot('04-webhook-secret-shown-once');
    await page.getByRole('link', { name: 'I have copied it, go back' }).click();
    await page.waitForURL(/\/settings\/webhooks\/whk_\w+$/);
    webhookId = page.url().split('/').pop()!;
    expect(webhookId).toMatch(/^whk_/);
    const row = await t.db
      .selectFrom('webhooks')
      .select(['event_types', 'rate_limit'])
      .executeTakeFirstOrThrow();
    expect(row.event_types).toHaveLength(EVENT_TYPE_NAMES.length);
    expect(row.rate_limit).toBe(20);
    await page.getByText('at most 20 deliveries a second', { exact: true }).waitFor();
    await expect(page.getByLabel('Rate limit').inputValue()).resolves.toBe('20');
    await expectAllControlsLabelled();

    await press('Send a test event', 'test-sent');
    await expect(page.getByRole('status').textContent()).resolves.toContain('A test event is on its way');
    const request = await waitFor(() => receiver.requests[0] ?? null, {
      timeoutMs: 15_000,
      what: 'the test delivery',
    });
    expect(verifySignature(request, firstSecret)).toBe(true);
    expect(JSON.parse(request.body)).toMatchObject({
      object: 'event',
      type: 'trip.created',
      id: expect.stringMatching(/^evt_test_/),
    });

    await reloadUntil('Delivered', 'the delivery in the log');
    const logRow = page.getByRole('row', { name: /Delivered/ });
    await expect(logRow.textContent()).resolves.toMatch(/trip\.created[\s\S]*evt_test_[\s\S]*200/);
    await shot('05-delivery-log');
  },
  60_000,
);

withChromium(
  'the owner rotates the secret: during the overlap each delivery is signed with both',
  async () => {
    await expect(page.getByLabel('Keep the current secret signing for').inputValue()).resolves.toBe('86400');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('heading', { name: 'Your new signing secret' }).waitFor();
    const newSecret = (await page.locator('output[aria-label="Signing secret"]').textContent())!.trim();
    expect(newSecret).not.toBe(firstSecret);
    await shot('06-secret-rotated');
    await page.getByRole('link', { name: 'I have copied it, go back' }).click();
    await page.getByText('signs until').waitFor();

    const before = receiver.requests.length;
    await press('Send a test event', 'test-sent');
    const request = await waitFor(() => receiver.requests[before] ?? null, {
      timeoutMs: 15_000,
      what: 'a delivery',
    });
    expect(String(request.headers['service-signature']).match(/v1=/g)).toHaveLength(2);
    expect(verifySignature(request, firstSecret)).toBe(true);
    expect(verifySignature(request, newSecret)).toBe(true);
  },
  60_000,
);

withChromium(
  'a failing webhook is switched off after the window, and the owner switches it back on',
  async () => {
    receiver.answer = () => ({ status: 500, body: 'down for maintenance' });
    await press('Send a test event', 'test-sent');
    await reloadUntil('Switched off', 'the switch-off');
    await shot('07-switched-off');
    // Why, in words, and the answer in full on the attempt's own page.
    await page.getByRole('link', { name: 'Failed only' }).click();
    await page
      .getByRole('link', { name: /^Details of attempt/ })
      .first()
      .click();
    await page.getByText('down for maintenance').waitFor();
    await expect(
      page.getByText('answered 500 Internal Server Error', { exact: false }).count(),
    ).resolves.toBeGreaterThan(0);
    await expect(page.getByText('Service-Signature: t=', { exact: false }).count()).resolves.toBe(1);
    expect(await page.content()).not.toContain(firstSecret);
    await shot('07b-failed-attempt');
    await page.goto(`${api.url}/settings/webhooks/${webhookId}`);

    receiver.answer = () => ({ status: 200, body: 'ok' });
    await page.getByRole('button', { name: 'Switch back on' }).focus();
    await Promise.all([
      page.waitForURL(`**/settings/webhooks/${webhookId}?notice=webhook-enabled`),
      page.keyboard.press('Enter'),
    ]);
    await expect(page.getByRole('status').textContent()).resolves.toContain('The webhook is on again');
    await expect(page.getByText('Active', { exact: true }).count()).resolves.toBe(1);
    await shot('08-switched-back-on');
    const row = await t.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', webhookId)
      .executeTakeFirstOrThrow();
    expect([row.disabled_at, row.failing_since]).toEqual([null, null]);
    const audit = await t.db
      .selectFrom('audit_log')
      .select(['action', 'actor'])
      .where('object_id', '=', webhookId)
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.action)).toEqual([
      'webhook.created',
      'webhook.test_sent',
      'webhook.secret_rotated',
      'webhook.test_sent',
      'webhook.test_sent',
      'webhook.enabled',
    ]);
    await page.goto(`${api.url}/settings`);
    await page.getByRole('columnheader', { name: 'Delivered, 24 h' }).waitFor();
    await shot('08b-overview-with-rates');
    await page.goto(`${api.url}/settings/webhooks/${webhookId}`);
    expect(new Set(audit.map((a) => a.actor))).toEqual(new Set([people.owner.email]));
  },
  60_000,
);

withChromium(
  'the owner redelivers the events recorded since a time',
  async () => {
    await ensureEventPartitions(t.db, new Date(Date.now() - 86_400_000), 3);
    const recorded = await sql<{ id: string }>`
    INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
    VALUES (nextval('events_seq'), gen_id('evt'), ${people.agencyId}, 'trip.status_changed', 'trip', 'trp_A',
            '{"from": "planning", "to": "confirmed"}'::jsonb, now() - interval '30 minutes')
    RETURNING id`.execute(t.db);
    const eventId = recorded.rows[0]!.id;
    const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
    await page.getByLabel('Send again every event since (UTC)').fill(since);
    await press('Redeliver', 'redelivered');
    const request = await waitFor(() => receiver.requests.find((r) => r.body.includes(eventId)) ?? null, {
      timeoutMs: 15_000,
      what: 'the redelivered event',
    });
    expect(JSON.parse(request.body)).toMatchObject({ id: eventId, type: 'trip.status_changed' });
    await reloadUntil(eventId, 'the redelivery in the log');
    await shot('09-redelivered');

    // The same event once more, from its attempt's page: a new delivery, audited.
    const row = page.getByRole('row', { name: new RegExp(eventId) });
    await row.getByRole('link', { name: /^Details of attempt/ }).click();
    await page.getByRole('button', { name: 'Send this event again' }).click();
    await page.waitForURL(/notice=sent-again$/);
    await expect(page.getByRole('status').textContent()).resolves.toContain('queued to be sent again');
    await waitFor(
      () => (receiver.requests.filter((r) => r.body.includes(eventId)).length === 2 ? true : null),
      {
        timeoutMs: 15_000,
        what: 'the event sent again',
      },
    );
    await shot('09b-sent-again');
  },
  60_000,
);

withChromium(
  'the owner changes the rate limit, then removes it: the overview and the page show it',
  async () => {
    await page.goto(`${api.url}/settings/webhooks/${webhookId}`);
    const change = page.locator(`form[action="/settings/webhooks/${webhookId}"]`);
    await change.getByLabel('Rate limit').fill('5');
    await press('Save changes', 'webhook-updated');
    await page.getByText('at most 5 deliveries a second', { exact: true }).waitFor();
    await page.goto(`${api.url}/settings`);
    const row = page.getByRole('row', { name: /Our CRM/ });
    await expect(row.getByRole('cell', { name: 'at most 5 deliveries a second' }).count()).resolves.toBe(1);
    await shot('09c-rate-limit');

    await page.goto(`${api.url}/settings/webhooks/${webhookId}`);
    await change.getByLabel('Rate limit').fill('');
    await press('Save changes', 'webhook-updated');
    await expect(page.getByLabel('Rate limit').inputValue()).resolves.toBe('');
    const stored = await t.db
      .selectFrom('webhooks')
      .select('rate_limit')
      .where('id', '=', webhookId)
      .executeTakeFirstOrThrow();
    expect(stored.rate_limit).toBeNull();
    const audit = await t.db
      .selectFrom('audit_log')
      .select('details')
      .where('object_id', '=', webhookId)
      .where('action', '=', 'webhook.updated')
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.details)).toEqual([
      { rate_limit: { from: 20, to: 5 } },
      { rate_limit: { from: 5, to: null } },
    ]);
  },
  30_000,
);

withChromium(
  'a planner signs in and is refused, in the browser too',
  async () => {
    const context = await browser.newContext();
    const planner = await context.newPage();
    await planner.goto(`${api.url}/settings/sign-in`);
    await planner.getByLabel('E-mail').fill(people.planner.email);
    await planner.getByLabel('Password').fill(PASSWORD);
    const [response] = await Promise.all([
      planner.waitForResponse((r) => r.url() === `${api.url}/settings`),
      planner.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    expect(response.status()).toBe(403);
    await planner.getByRole('heading', { name: 'Owners only' }).waitFor();
    await planner.screenshot({ path: join(SHOTS, '10-planner-refused.png'), fullPage: true });
    await context.close();
  },
  30_000,
);
