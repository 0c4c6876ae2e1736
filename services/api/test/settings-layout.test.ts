import type { Browser, Page } from 'playwright-core';
import { createApiKey } from '@trips/db/api-keys';
import { recordAttempts, type NewAttempt } from '@trips/db/webhook-attempts';
import { createWebhook, setWebhookEnabled } from '@trips/db/webhooks';
import { EVENT_TYPE_NAMES, ICON_SVG, TEST_EVENT_ID_PREFIX } from '@trips/contracts';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { launchChromium, linesOf, overflowing, shoot, withChromium } from './browser-support.ts';
import { agencyWithPeople, PASSWORD, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// The settings page as an owner sees it on a laptop (1280 px) and a phone (390 px), in real
// Chromium, with what a struggling receiver leaves behind: a delivery log of failures with long
// reasons, a day of attempts in the health charts, answers in JSON and in HTML. Each check is
// measured in the page (lines an id takes, where axis labels sit, what reaches past the screen),
// and each page is photographed (test/artifacts/settings/layout-*.png).

const HOUR = 3_600_000;

interface Box {
  left: number;
  right: number;
  top: number;
  text: string;
}
interface Chart {
  bars: Box[];
  labels: Box[];
  bottom: number;
  figure: Box;
}
/** "Mon" for a bar titled "2026-03-02: 5 attempts, …" (its day, in UTC). */
const weekday = (title: string) =>
  new Date(`${title.slice(0, 10)}T00:00:00Z`).toLocaleDateString('en-GB', {
    weekday: 'short',
    timeZone: 'UTC',
  });
let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let browser: Browser;
let people: People;
let failingId = '';
let offId = '';
/** The attempt that sent a JSON body and got a JSON answer, and the one answered in HTML. */
let jsonAttempt = 0;
let htmlAttempt = 0;

const SENT = JSON.stringify({
  object: 'event',
  id: `${TEST_EVENT_ID_PREFIX}Qm4xZt8LwRr2aPq7`,
  type: 'trip.status_changed',
  created_at: '2026-03-02T09:14:05.123456Z',
  data: { id: 'trp_7QmZtLw8RrX4aPq2', from: 'planning', to: 'confirmed', tags: [], notes: null },
});
const ANSWERED_JSON = '{"error":{"code":"maintenance","message":"Down until 10:00 UTC","retry":true}}';
const ANSWERED_HTML = '<html><body><h1>503 Service Unavailable</h1>\n<p>nginx</p></body></html>';

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  people = await agencyWithPeople(t.db, 'Fairway Tours');
  await createApiKey(t.db, { agencyId: people.agencyId, scopes: ['trips:read'], name: 'Booking sync' });
  await createApiKey(t.db, { agencyId: people.agencyId, scopes: ['events:read'] });
  const failing = await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://crm.fairway-tours.example/hooks/trips',
    eventTypes: [...EVENT_TYPE_NAMES],
    description: 'Our CRM',
  });
  failingId = failing.webhook.id;
  const off = await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://old.fairway-tours.example/hooks',
    eventTypes: ['trip.created'],
  });
  offId = off.webhook.id;
  await setWebhookEnabled(t.db, offId, false);
  await recordAttempts(t.db, failures(failingId));
  const ids = await t.db
    .selectFrom('webhook_attempts')
    .select(['id', 'response_body'])
    .where('webhook_id', '=', failingId)
    .execute();
  jsonAttempt = ids.find((a) => a.response_body === ANSWERED_JSON)!.id;
  htmlAttempt = ids.find((a) => a.response_body === ANSWERED_HTML)!.id;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await t?.drop();
});

/** A day of a receiver that fails in every way the log words, a few deliveries among them. */
function failures(webhookId: string): NewAttempt[] {
  const now = Date.now();
  const kinds: Partial<NewAttempt>[] = [
    {
      statusCode: 500,
      error: 'http_status',
      responseBody: ANSWERED_JSON,
      requestBody: SENT,
      eventType: 'trip.status_changed',
    },
    { statusCode: 503, error: 'http_status', responseBody: ANSWERED_HTML },
    { statusCode: null, error: 'timeout', durationMs: 10_000, responseBody: null },
    { statusCode: null, error: 'tls', errorDetail: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', responseBody: null },
    { statusCode: null, error: 'connection_refused', errorDetail: 'ECONNREFUSED', responseBody: null },
    { statusCode: 200, error: null, responseBody: '{"received":true}' },
  ];
  return Array.from({ length: 30 }, (_, i) => {
    const kind = kinds[i % kinds.length]!;
    const test = 'requestBody' in kind;
    return {
      webhookId,
      eventId: test
        ? `${TEST_EVENT_ID_PREFIX}Qm4xZt8LwRr2aPq7`
        : `evt_7QmZtLw8RrX4aP${String(i).padStart(2, '0')}`,
      eventType: EVENT_TYPE_NAMES[i % EVENT_TYPE_NAMES.length],
      attempt: 1 + (i % 4),
      attemptedAt: new Date(now - (30 - i) * 0.7 * HOUR),
      durationMs: 230,
      requestSignature: `t=${Math.floor(now / 1000)},v1=${'a1b2c3d4'.repeat(8)}`,
      responseHeaders: 'content-type: application/json',
      ...kind,
    } as NewAttempt;
  });
}

async function signedIn(width: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(`${api.url}/settings/sign-in`);
  await page.getByLabel('E-mail').fill(people.owner.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API settings', level: 1 }).waitFor();
  return page;
}

/** Nothing reaches past the screen's edges, and the document does not scroll sideways. */
async function expectNothingOffScreen(page: Page, name: string) {
  const { scrollWidth, viewport, elements } = await overflowing(page);
  expect({ name, scrollWidth, elements }).toEqual({ name, scrollWidth: viewport, elements: [] });
}

describe.each([1280, 390])('at %i px', (width) => {
  let page: Page;
  beforeAll(async () => {
    if (process.env.SKIP_BROWSER_TESTS !== '1') page = await signedIn(width);
  }, 30_000);
  afterAll(() => page?.close());

  withChromium('the overview: each key prefix on one line', async () => {
    await page.goto(`${api.url}/settings`);
    await shoot(page, `layout-${width}-overview`);
    await expectNothingOffScreen(page, 'overview');
    const prefixes = await linesOf(page, 'th[scope=row] code');
    expect(prefixes.length).toBe(2);
    for (const p of prefixes) expect(p).toEqual({ text: expect.stringMatching(/^tps_\w+…$/), lines: 1 });
  });

  withChromium('the delivery log of failures: each event id and time readable, not crushed', async () => {
    await page.goto(`${api.url}/settings/webhooks/${failingId}`);
    await shoot(page, `layout-${width}-webhook`);
    await expectNothingOffScreen(page, 'webhook');
    const ids = await linesOf(page, '#log tbody code');
    const times = await linesOf(page, '#log tbody td:first-child time');
    expect([ids.length, times.length]).toEqual([2 * 30, 30]);
    // An event's type and id each on a line of its own, whole; its time on at most two.
    expect({ ids: ids.filter((c) => c.lines > 1), times: times.filter((c) => c.lines > 2) }).toEqual({
      ids: [],
      times: [],
    });
    await page.getByRole('link', { name: 'Failed only' }).click();
    await page.waitForURL(/log=failed/);
    await shoot(page, `layout-${width}-webhook-failed-only`);
    expect((await linesOf(page, '#log tbody code')).filter((c) => c.lines > 1)).toEqual([]);
  });

  withChromium('the health charts have a time axis under their bars', async () => {
    await page.goto(`${api.url}/settings/webhooks/${failingId}`);
    const charts = await page.evaluate<
      Chart[]
    >(`[...document.querySelectorAll('.health-grid figure')].map((f) => {
      const box = (e) => { const r = e.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top }; };
      return {
        bars: [...f.querySelectorAll('svg g')].map((g) => ({ ...box(g), text: g.querySelector('title').textContent })),
        labels: [...f.querySelectorAll('.axis span')].filter((s) => s.textContent.trim())
          .map((s) => ({ ...box(s), text: s.textContent.trim() })),
        bottom: f.querySelector('svg').getBoundingClientRect().bottom,
        figure: box(f),
      };
    })`);
    expect(charts.map((c) => c.bars.length)).toEqual([24, 7]);
    const [hours, days] = charts as [Chart, Chart];
    // Hours: every sixth hour's start, where its bar starts; days: each day's name, centred on its bar.
    const hourBars = hours.bars.filter((_, i) => i % 6 === 0);
    expect(hours.labels.map((l) => l.text)).toEqual(hourBars.map((b) => /(\d\d:00) UTC/.exec(b.text)![1]));
    expect(days.labels.map((l) => l.text)).toEqual(days.bars.map((b) => weekday(b.text)));
    hours.labels.forEach((label, i) => expect(Math.abs(label.left - hourBars[i]!.left)).toBeLessThan(3));
    const centre = (b: Box) => (b.left + b.right) / 2;
    days.labels.forEach((label, i) =>
      expect(Math.abs(centre(label) - centre(days.bars[i]!))).toBeLessThan(3),
    );
    for (const chart of charts) {
      chart.labels.forEach((label, i) => {
        expect(label.top).toBeGreaterThanOrEqual(chart.bottom - 1);
        expect(label.left).toBeGreaterThanOrEqual(chart.figure.left - 1);
        expect(label.right).toBeLessThanOrEqual(chart.figure.right + 1);
        if (i > 0) expect(label.left).toBeGreaterThan(chart.labels[i - 1]!.right);
      });
    }
  });

  withChromium('an attempt page shows a JSON body indented and any other body exactly', async () => {
    await page.goto(`${api.url}/settings/webhooks/${failingId}/attempts/${jsonAttempt}`);
    await shoot(page, `layout-${width}-attempt-json`);
    await expectNothingOffScreen(page, 'attempt');
    const bodies = await page.locator('pre.block').allTextContents();
    expect(bodies).toContain(JSON.stringify(JSON.parse(SENT), null, 2));
    expect(bodies).toContain(JSON.stringify(JSON.parse(ANSWERED_JSON), null, 2));
    await page.goto(`${api.url}/settings/webhooks/${failingId}/attempts/${htmlAttempt}`);
    await shoot(page, `layout-${width}-attempt-html`);
    expect(await page.locator('pre.block').allTextContents()).toContain(ANSWERED_HTML);
  });

  withChromium('a switched-off webhook points to no redelivery form it does not show', async () => {
    await page.goto(`${api.url}/settings/webhooks/${offId}`);
    await shoot(page, `layout-${width}-switched-off`);
    await expectNothingOffScreen(page, 'switched off');
    await expect(page.getByRole('heading', { name: 'Redeliver events' }).count()).resolves.toBe(0);
    await expect(page.getByText(/below/).count()).resolves.toBe(0);
    await expect(page.getByText(/redeliver/i).count()).resolves.toBeGreaterThan(0);
  });
});

withChromium(
  'every page has an icon, and no page load meets a 404',
  async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // The API's own access log: it also sees what the browser fetches by itself (an icon), which the
    // page's events do not report.
    const from = api.logs.lines.length;
    await page.goto(`${api.url}/settings/sign-in`);
    await page.getByLabel('E-mail').fill(people.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API settings', level: 1 }).waitFor();
    const icons = new Map<string, string | null>();
    for (const path of [
      '/settings',
      `/settings/webhooks/${failingId}`,
      `/settings/webhooks/${failingId}/attempts/${jsonAttempt}`,
      '/docs',
    ]) {
      await page.goto(api.url + path, { waitUntil: 'networkidle' });
      const href = await page.evaluate<string | null>(
        `document.querySelector('link[rel=icon]')?.getAttribute('href') ?? null`,
      );
      icons.set(path, href && new URL(href, page.url()).href);
    }
    // What a browser asks for by itself on a page that names no icon (the API's JSON, say).
    await page.goto(`${api.url}/favicon.ico`);
    await page.close();
    const answered = api.logs.lines
      .slice(from)
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { msg: string; path: string; status: number })
      .filter((line) => line.msg === 'request');
    expect(answered.length).toBeGreaterThan(5);
    expect(answered.filter((line) => line.status === 404).map((line) => line.path)).toEqual([]);

    // The settings pages link the icon the API serves; /docs carries it in a data URL.
    for (const [path, icon] of icons) {
      expect([path, icon]).toEqual([path, expect.any(String)]);
      const svg = icon!.startsWith('data:')
        ? decodeURIComponent(icon!.slice(icon!.indexOf(',') + 1))
        : await fetch(icon!).then(async (answer) => {
            expect([icon, answer.status, answer.headers.get('content-type')]).toEqual([
              icon,
              200,
              'image/svg+xml',
            ]);
            return answer.text();
          });
      expect(svg).toBe(ICON_SVG);
    }
  },
  60_000,
);
