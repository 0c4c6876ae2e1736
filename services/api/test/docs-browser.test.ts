import type { Browser, Page } from 'playwright-core';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { launchChromium, linesOf, overflowing, shoot, shootAt, withChromium } from './browser-support.ts';
import { startTestApi } from './support.ts';

// The API's reference at /docs as a developer reads it, on a laptop (1280 px) and a phone (390 px),
// in real Chromium: nothing runs off the screen, and no name in its tables (a parameter, a field,
// a header, a code) is broken mid-word. Screenshots: test/artifacts/settings/docs-*.png.

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let browser: Browser;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix() });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await api?.stop();
  await t?.drop();
});

describe.each([1280, 390])('/docs at %i px', (width) => {
  let page: Page;
  beforeAll(async () => {
    if (process.env.SKIP_BROWSER_TESTS === '1') return;
    page = await browser.newPage({ viewport: { width, height: 900 }, deviceScaleFactor: 1 });
    await page.goto(`${api.url}/docs`);
  }, 30_000);
  afterAll(() => page?.close());

  withChromium('nothing reaches past the screen', async () => {
    await shoot(page, `docs-${width}`);
    await shootAt(page, 'body', `docs-${width}-top`);
    await shootAt(page, '#op-listTrips', `docs-${width}-list-trips`);
    await shootAt(page, '#schema-Trip', `docs-${width}-trip`);
    const { scrollWidth, viewport, elements } = await overflowing(page);
    expect({ scrollWidth, elements }).toEqual({ scrollWidth: viewport, elements: [] });
  });

  withChromium('every name in the first column of a table is whole, on one line', async () => {
    const names = await linesOf(page, 'main td:first-child > code');
    expect(names.length).toBeGreaterThan(100);
    expect(names.filter((n) => n.lines > 1)).toEqual([]);
  });
});
