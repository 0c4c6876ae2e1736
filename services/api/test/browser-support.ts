import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

// What the browser tests of the settings page and /docs share: Debian's Chromium through
// playwright-core, the folder their screenshots go to (CI keeps it), and the measurements they
// take of a page. The page's own code is a string evaluated in it: this project's types have no DOM.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Skipped only where scripts/browser.sh found no Chromium to be had outside CI, and said so. With
 * every test skipped, jest runs neither beforeAll nor afterAll: no Chromium is launched.
 */
export const withChromium = process.env.SKIP_BROWSER_TESTS === '1' ? test.skip : test;

export const SHOTS = join(import.meta.dirname, '../../../test/artifacts/settings');

export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
}

/** A full-page screenshot into SHOTS. */
export const shoot = (page: Page, name: string) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/**
 * How many lines each inline element matching `selector` takes, in document order (an id that
 * wraps once is 2): its boxes' distinct tops, since Chromium gives an inline without a background
 * of its own one box per child, several on one line. Elements not shown are left out.
 */
export function linesOf(page: Page, selector: string): Promise<{ text: string; lines: number }[]> {
  return page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})]
    .filter((e) => e.getClientRects().length > 0)
    .map((e) => {
      const tops = [...e.getClientRects()].map((r) => r.top).sort((a, b) => a - b);
      const lines = tops.filter((top, i) => i === 0 || top - tops[i - 1] > 2).length;
      return { text: e.textContent.trim(), lines };
    })`);
}

/**
 * What reaches past the viewport's right edge, or across its left one: every shown element whose
 * box does, even inside an element that scrolls sideways (a reader on a phone should not have to).
 * What lies wholly left of the screen is hidden there on purpose (the skip link until it is
 * focused, a stacked table's headings). Also the document's own scroll width.
 */
export function overflowing(
  page: Page,
): Promise<{ scrollWidth: number; viewport: number; elements: string[] }> {
  return page.evaluate(`(() => {
    const viewport = document.documentElement.clientWidth;
    const elements = [...document.body.querySelectorAll('*')]
      .filter((e) => e.getClientRects().length > 0)
      .filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.right > 0 && (Math.floor(r.right) > viewport || Math.ceil(r.left) < 0);
      })
      .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '')
        + ' ' + (e.textContent || '').trim().slice(0, 40));
    return { scrollWidth: document.documentElement.scrollWidth, viewport, elements };
  })()`);
}

/** A screenshot of a viewport's height of the page, from the first element matching `selector` down. */
export async function shootAt(page: Page, selector: string, name: string) {
  const top = await page.evaluate<number>(
    `document.querySelector(${JSON.stringify(selector)}).getBoundingClientRect().top + window.scrollY`,
  );
  const { width, height } = page.viewportSize()!;
  await page.screenshot({
    path: join(SHOTS, `${name}.png`),
    fullPage: true,
    clip: { x: 0, y: top, width, height },
  });
}
