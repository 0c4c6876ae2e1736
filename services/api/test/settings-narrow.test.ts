import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { recordAttempts, type NewAttempt } from '@trips/db/webhook-attempts';
import { createWebhook } from '@trips/db/webhooks';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { launchChromium, SHOTS, withChromium } from './browser-support.ts';
import { agencyWithPeople, PASSWORD, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// Every settings page on a phone (issue 26): at 390 px wide, in real Chromium, nothing runs off
// the screen (no table wider than the page, no sideways scrolling) and the header stays a few
// lines, not a column. A full-page screenshot of each goes to test/artifacts/settings/narrow-*.png,
// which CI keeps. The pages hold real content: keys, webhooks of every state, a delivery log with
// long failure reasons, an attempt in full.

const WIDTH = 390;

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let browser: Browser;
let page: Page;
let people: People;
let webhookId = '';

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  people = await agencyWithPeople(t.db, 'Fairway Tours of the Scottish Highlands and Islands');
  const long = await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://integrations.fairway-tours-of-the-highlands.example/webhooks/trips/receive?tenant=highlands-and-islands',
    eventTypes: [...EVENT_TYPE_NAMES],
    description: 'Our CRM, which books tee times and sends the welcome pack',
  });
  webhookId = long.webhook.id;
  await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://hooks.example/payments',
    eventTypes: ['payment.created', 'payment.paid'],
  });
  const now = Date.now();
  const attempt = (i: number, fields: Partial<NewAttempt>): NewAttempt => ({
    webhookId,
    eventId: `evt_2k9QmZtLw8RrX4aPq${i}`,
    eventType: 'trip.status_changed',
    attempt: 1,
    attemptedAt: new Date(now - (60 - i) * 60_000),
    durationMs: 230,
    statusCode: 200,
    error: null,
    responseBody: '{"received":true}',
    requestSignature: `t=${Math.floor(now / 1000)},v1=${'a1b2c3d4'.repeat(8)}`,
    responseHeaders: 'content-type: application/json\nx-request-id: 6f1c0d2e-0b6a-4d0e-9d55-0a4c1f3e2b77',
    ...fields,
  });
  await recordAttempts(t.db, [
    ...Array.from({ length: 8 }, (_, i) => attempt(i, {})),
    attempt(8, {
      statusCode: 301,
      error: 'redirect',
      responseBody: 'Moved',
      responseHeaders: 'location: https://x.example/',
    }),
    attempt(9, {
      statusCode: null,
      error: 'tls',
      errorDetail: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      responseBody: null,
      responseHeaders: null,
    }),
  ]);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: WIDTH, height: 844 }, deviceScaleFactor: 1 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await t?.drop();
});

/**
 * The page fits 390 px: the document does not scroll sideways, no table or form control reaches
 * past the right edge, and the header is at most a few lines high. Then its screenshot.
 */
async function fitsAndShoot(name: string) {
  // A string, evaluated in the page: this project's types have no DOM.
  const layout = await page.evaluate<{ scrollWidth: number; right: number; header: number }>(`(() => {
    const right = Math.max(0, ...[...document.querySelectorAll('table, pre, svg, input, select, button, textarea')]
      .map((e) => e.getBoundingClientRect().right));
    return {
      scrollWidth: document.documentElement.scrollWidth,
      right: Math.ceil(right),
      header: document.querySelector('header.top').getBoundingClientRect().height,
    };
  })()`);
  await page.screenshot({ path: join(SHOTS, `narrow-${name}.png`), fullPage: true });
  expect({ name, ...layout, headerFewLines: layout.header < 130 }).toEqual({
    name,
    scrollWidth: WIDTH,
    right: expect.any(Number),
    header: expect.any(Number),
    headerFewLines: true,
  });
  expect([name, layout.right <= WIDTH]).toEqual([name, true]);
}

withChromium(
  'every settings page is usable 390 px wide, and each is photographed',
  async () => {
    await page.goto(`${api.url}/settings/sign-in`);
    await fitsAndShoot('01-sign-in');
    await page.getByLabel('E-mail').fill(people.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API settings', level: 1 }).waitFor();

    const create = page.locator('form[action="/settings/keys"]');
    await create.getByLabel('Name').fill('Booking sync for the Highlands office');
    await create.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
    await fitsAndShoot('02-key-shown-once');
    await page.reload();
    await page.getByRole('heading', { name: 'Already shown' }).waitFor();
    await fitsAndShoot('03-already-shown');

    await page.goto(`${api.url}/settings`);
    await fitsAndShoot('04-overview');

    await page.getByLabel('Endpoint URL').fill('https://10.1.2.3/hooks');
    await page.getByRole('group', { name: 'Events to send' }).getByLabel('All events').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByRole('alert').waitFor();
    await fitsAndShoot('05-webhook-refused');

    await page.goto(`${api.url}/settings/webhooks/${webhookId}`);
    await fitsAndShoot('06-webhook');
    await page.getByRole('link', { name: 'Failed only' }).click();
    await page.waitForURL(/log=failed/);
    await fitsAndShoot('07-webhook-failed-only');
    await page
      .getByRole('link', { name: /^Details of attempt/ })
      .first()
      .click();
    await page.getByRole('heading', { name: /^Attempt 1 of/ }).waitFor();
    await fitsAndShoot('08-attempt');

    await page.goto(`${api.url}/settings/webhooks/whk_nothere`);
    await fitsAndShoot('09-not-found');

    const planner = await browser.newPage({ viewport: { width: WIDTH, height: 844 } });
    await planner.goto(`${api.url}/settings/sign-in`);
    await planner.getByLabel('E-mail').fill(people.planner.email);
    await planner.getByLabel('Password').fill(PASSWORD);
    await planner.getByRole('button', { name: 'Sign in' }).click();
    await planner.getByRole('heading', { name: 'Owners only' }).waitFor();
    const plannerWidth = await planner.evaluate<number>('document.documentElement.scrollWidth');
    expect(plannerWidth).toBe(WIDTH);
    await planner.screenshot({ path: join(SHOTS, 'narrow-10-planner-refused.png'), fullPage: true });
    await planner.close();
  },
  60_000,
);
