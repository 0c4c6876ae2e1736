import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { startTestApi } from './support.ts';

// GET / points to the docs (issue 26): a browser is sent to /docs, a program gets the links; and
// the settings page's "webhooks guide" link lands on a real section of that page.

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

test('GET / sends a browser to /docs and tells a program where the docs are', async () => {
  const browser = await fetch(`${api.url}/`, {
    headers: { accept: 'text/html,*/*;q=0.8' },
    redirect: 'manual',
  });
  expect(browser.status).toBe(302);
  expect(browser.headers.get('location')).toBe('/docs');
  expect(browser.headers.get('request-id')).toMatch(/^req_/);

  const program = await fetch(`${api.url}/`);
  expect(program.status).toBe(200);
  expect(program.headers.get('link')).toBe(
    '</docs>; rel="service-doc", </api/v1/openapi.json>; rel="service-desc"',
  );
  expect(await program.json()).toEqual({
    name: 'Trip Service API',
    docs: '/docs',
    openapi: '/api/v1/openapi.json',
    api: '/api/v1',
    settings: '/settings',
  });
  expect((await fetch(`${api.url}/`, { method: 'POST' })).status).toBe(405);

  const docs = await (await fetch(`${api.url}/docs`)).text();
  expect(docs).toContain('<h1>Trip Service API</h1>');
  expect(docs).toContain('<h2 id="webhooks">Webhooks</h2>');
});
