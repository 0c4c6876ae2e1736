import {
  ERROR_CODE_NAMES,
  EVENT_TYPE_NAMES,
  ICON_SVG,
  openapiDocument,
  renderReferencePage,
} from '../src/index.ts';
import type { OpenApiDocument } from '../src/index.ts';
import { escapeHtml as escape } from '../src/escape-html.ts';

const page = renderReferencePage();
const ATTACK = `<script>alert("x")</script>`;
const ESCAPED = '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;';

test('escape neutralises every character that is markup in text or attributes', () => {
  expect(escape(`<a href="x" title='y'>&amp;</a>`)).toBe(
    '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
  );
});

test('the page is one complete, self-contained HTML document', () => {
  expect(page.startsWith('<!doctype html>\n<html lang="en">')).toBe(true);
  expect(page).toContain('<title>Trip Service API reference</title>');
  expect(page.match(/<h1>/g)).toHaveLength(1);
  expect(page).toContain('<main id="main">');
  // Nothing fetched from elsewhere: the machine serving it may have no internet, and nothing runs.
  // Its icon is in the page itself.
  const icon = /<link rel="icon" href="data:image\/svg\+xml,([^"]+)">\n/.exec(page);
  expect(decodeURIComponent(icon![1]!)).toBe(ICON_SVG);
  expect(page.replace(icon![0], '')).not.toMatch(
    /<script|<link|<iframe|<img|\bsrc=|url\(|@import|href="(?!#)/i,
  );
});

test('it documents every operation: path, method, scope, parameters and error codes', () => {
  for (const [path, item] of Object.entries(openapiDocument.paths)) {
    const op = item.get!;
    const start = page.indexOf(`id="op-${op.operationId}"`);
    expect([path, start]).not.toEqual([path, -1]);
    const section = page.slice(start, page.indexOf('</section>', start));
    expect(section).toContain(`<span class="method">GET</span> <code>${path}</code>`);
    for (const requirement of op.security) {
      for (const scope of requirement.bearerAuth ?? []) expect(section).toContain(`<code>${scope}</code>`);
    }
    for (const parameter of op.parameters ?? []) {
      const name =
        '$ref' in parameter
          ? openapiDocument.components.parameters[parameter.$ref.split('/').pop()!]!.name
          : parameter.name;
      expect(section).toContain(`<td><code>${name}</code></td>`);
    }
    for (const status of Object.keys(op.responses)) expect(section).toContain(`<strong>${status}</strong>`);
  }
  expect(page).toContain('Public: no key needed.');
  for (const code of ERROR_CODE_NAMES.filter((code) => code !== 'method_not_allowed')) {
    expect(page).toContain(`<td data-label="Code"><code>${code}</code></td>`);
  }
  expect(page).toContain('<code>method_not_allowed</code>');
});

test('it documents the webhook delivery, its headers and every event type', () => {
  const start = page.indexOf('<h2 id="webhooks">');
  expect(start).toBeGreaterThan(0);
  const webhooks = page.slice(start, page.indexOf('<h2 id="objects">'));
  expect(webhooks).toContain('<span class="method">POST</span>');
  for (const header of ['Service-Signature', 'Service-Event-Id', 'Service-Event-Type']) {
    expect(webhooks).toContain(`<td><code>${header}</code></td>`);
  }
  for (const type of EVENT_TYPE_NAMES) expect(webhooks).toContain(`<td><code>${type}</code></td>`);
});

test('every in-page link has a target and no id is used twice', () => {
  const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((match) => match[1]);
  expect(new Set(ids).size).toBe(ids.length);
  const targets = [...page.matchAll(/href="#([^"]+)"/g)].map((match) => match[1]);
  expect(targets.length).toBeGreaterThan(20);
  expect(targets.filter((target) => !ids.includes(target))).toEqual([]);
});

test('everything interpolated from the document is escaped', () => {
  const hostile = structuredClone(openapiDocument) as OpenApiDocument;
  hostile.info.title = ATTACK;
  hostile.info.description = `Intro ${ATTACK} with \`${ATTACK}\` code`;
  hostile.tags[0]!.description = ATTACK;
  const trips = hostile.paths['/api/v1/trips/{id}']!;
  delete hostile.paths['/api/v1/trips/{id}'];
  hostile.paths[`/api/v1/${ATTACK}`] = trips;
  trips.get!.summary = ATTACK;
  trips.get!.operationId = `x"><img src=x onerror=alert(1)>`;
  trips.get!.parameters = [{ name: ATTACK, in: 'query', description: ATTACK, schema: { enum: [ATTACK] } }];
  hostile.components.schemas.Trip!.description = ATTACK;

  const html = renderReferencePage(hostile);
  expect(html).not.toContain('<script');
  expect(html).not.toContain('<img');
  expect(html).not.toContain('onerror=alert(1)>');
  expect(html.split(ESCAPED).length - 1).toBeGreaterThanOrEqual(9);
  expect(html).toContain(`<code>${ESCAPED}</code>`);
});
