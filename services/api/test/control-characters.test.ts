import http from 'node:http';
import fc from 'fast-check';
import { isValid, openapiDocument, type Parameter, type Ref } from '@trips/contracts';
import { recordAttempt } from '@trips/db/webhook-attempts';
import { createWebhook } from '@trips/db/webhooks';
import { createTestDatabase, randomAmqpPrefix, type TestDatabase } from '@trips/testkit';
import { encodeListCursor } from '../src/http/params.ts';
import { agencyWithPeople, FormClient, type People } from './settings-support.ts';
import { agencyWithKey, startTestApi, type Fixture } from './support.ts';

// Every value a client sends (an id, a query parameter, a cursor and what it decodes to, a field of
// the settings page's forms) is refused with a 400 naming it when it holds a control character, and
// nothing a client sends there is a 500. The API's routes and parameters are read from the OpenAPI
// document and the settings page's forms and links from its pages, so a new route, parameter or
// form is covered without a change here.

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;
let people: People;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t, { AMQP_PREFIX: randomAmqpPrefix(), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
  own = await agencyWithKey(t.db);
  people = await agencyWithPeople(t.db, 'Control Tours');
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const code = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => String.fromCharCode(from + i));
/** C0 (NUL to US), DEL and C1. */
const CONTROL_CHARACTERS = [...code(0x00, 0x1f), '\u007f', ...code(0x80, 0x9f)];
const holdsControl = (text: string) => [...text].some((c) => CONTROL_CHARACTERS.includes(c));

const controlCharacter = fc.constantFrom(...CONTROL_CHARACTERS);
const anyCharacter = fc.oneof(
  controlCharacter,
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.constantFrom(...'aZ09_-.~%+&=?#/ '.split('')),
);
const anyText = fc.string({ unit: anyCharacter, maxLength: 30 });
/** Text with at least one control character somewhere in it. */
const withControl = fc.tuple(anyText, controlCharacter, anyText).map(([a, c, b]) => a + c + b);

/** Raw http, not fetch: fetch would resolve `..` and refuse some paths before sending them. */
function rawGet(path: string, headers: Record<string, string>) {
  const url = new URL(api.url);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
const get = (path: string, key: string) => rawGet(path, { authorization: `Bearer ${key}` });

describe('the read API, every parameter of every documented operation', () => {
  const components = openapiDocument.components.parameters;
  const resolve = (p: Parameter | Ref): Parameter =>
    '$ref' in p ? components[p.$ref.split('/').pop()!]! : p;
  const parameters = Object.entries(openapiDocument.paths).flatMap(([template, item]) =>
    (item.get?.parameters ?? []).map((p) => ({
      template,
      parameter: resolve(p),
      statuses: new Set(Object.keys(item.get!.responses)),
    })),
  );

  /** The operation's path with `value` as the parameter, every other path parameter a plain id. */
  const pathWith = (template: string, parameter: Parameter, value: string) => {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) =>
      parameter.in === 'path' && name === parameter.name ? encodeURIComponent(value) : 'x_1',
    );
    return parameter.in === 'query' ? `${path}?${parameter.name}=${encodeURIComponent(value)}` : path;
  };

  test('the document has parameters to try, path and query', () => {
    expect(new Set(parameters.map((p) => p.parameter.in))).toEqual(new Set(['path', 'query']));
    expect(parameters.length).toBeGreaterThanOrEqual(10);
  });

  test.each(parameters.map((p) => [`${p.template} ${p.parameter.in} '${p.parameter.name}'`, p] as const))(
    '%s: a control character is a 400 naming it; no value is a 500',
    async (_, { template, parameter, statuses }) => {
      // A list cursor is checked also for what it decodes to: a control character inside one that
      // is otherwise exactly as the API writes them.
      const decodedCursor = withControl.map((id) =>
        encodeListCursor({ updatedAt: '2026-01-01T00:00:00.000000Z', id }),
      );
      const values = fc.sample(
        parameter === components.Cursor
          ? fc.oneof(anyText, withControl, decodedCursor)
          : fc.oneof(anyText, withControl),
        { numRuns: 60, seed: 40 },
      );
      const failures: string[] = [];
      for (const value of values) {
        const path = pathWith(template, parameter, value);
        const res = await get(path, own.key);
        const controlled =
          holdsControl(value) || (parameter === components.Cursor && holdsControl(decoded(value)));
        if (!statuses.has(String(res.status))) failures.push(`undocumented ${res.status} for ${path}`);
        if (res.status >= 400 && !isValid('Error', JSON.parse(res.body)))
          failures.push(`bad error body for ${path}: ${res.body}`);
        if (controlled) {
          const error = res.status === 400 ? JSON.parse(res.body).error : undefined;
          if (error?.code !== 'invalid_request' || error?.param !== parameter.name)
            failures.push(`${res.status} ${res.body.slice(0, 120)} for ${path}`);
        }
      }
      expect(failures.slice(0, 8)).toEqual([]);
    },
    60_000,
  );
});

/** What a base64url list cursor decodes to, or '' for one that is not base64url. */
function decoded(cursor: string): string {
  return /^[\w-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
}

interface Form {
  action: string;
  fields: [string, string][];
}

/** The page's forms that post, with the value each field would be sent with as the page stands. */
function formsOf(page: string): Form[] {
  const forms: Form[] = [];
  for (const [, attributes, inner] of page.matchAll(/<form([^>]*)>([\s\S]*?)<\/form>/g)) {
    const action = /action="([^"]*)"/.exec(attributes!)![1]!.replaceAll('&amp;', '&');
    const fields: [string, string][] = [];
    for (const [, name, rest] of inner!.matchAll(
      /<(?:input|select|textarea)\b[^>]*?name="([^"]+)"([^>]*)>/g,
    )) {
      const value = /value="([^"]*)"/.exec(rest!)?.[1] ?? /<option value="([^"]*)"/.exec(inner!)?.[1] ?? 'x';
      fields.push([name!, value.replaceAll('&amp;', '&')]);
    }
    forms.push({ action, fields });
  }
  return forms;
}

/** The page's links that carry a query string (the delivery log's pages, say). */
const linksWithQueries = (page: string) =>
  [...page.matchAll(/href="(\/settings[^"?]*\?[^"]+)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&'));

describe('the settings page, every field of every form and every parameter of its links', () => {
  let owner: FormClient;
  let anonymous: FormClient;
  const pages = new Map<string, string>();

  beforeAll(async () => {
    const { webhook } = await createWebhook(t.db, {
      agencyId: people.agencyId,
      url: 'https://receiver.example/hooks',
      eventTypes: ['trip.created'],
    });
    await recordAttempt(t.db, {
      webhookId: webhook.id,
      eventId: 'evt_1',
      eventType: 'trip.created',
      attempt: 1,
      attemptedAt: new Date(),
      durationMs: 20,
      statusCode: 500,
      error: 'http_status',
      responseBody: 'no',
    });
    const [attempt] = await t.db.selectFrom('webhook_attempts').select('id').execute();
    anonymous = new FormClient(api.url);
    pages.set('/settings/sign-in', (await anonymous.get('/settings/sign-in')).body);
    owner = new FormClient(api.url);
    expect((await owner.signIn(people.owner.email)).status).toBe(303);
    await owner.get('/settings');
    expect((await owner.post('/settings/keys', { scopes: 'trips:read' })).status).toBe(303);
    for (const path of [
      '/settings',
      `/settings/webhooks/${webhook.id}`,
      `/settings/webhooks/${webhook.id}/attempts/${attempt!.id}`,
    ]) {
      const page = await owner.get(path);
      expect(page.status).toBe(200);
      pages.set(path, page.body);
    }
  });

  const clientFor = (action: string) => (action === '/settings/sign-in' ? anonymous : owner);

  test('the pages have the forms to try: sign-in, keys, webhooks, deliveries', () => {
    const actions = [...pages.values()].flatMap(formsOf).map((f) => f.action);
    const expected = ['/sign-in', '/keys', '/scopes', '/webhooks', '/redeliver', '/send-again'];
    expect(expected.filter((end) => !actions.some((a) => a.endsWith(end)))).toEqual([]);
    expect([...pages.values()].flatMap(linksWithQueries)).toContainEqual(expect.stringMatching(/log=failed/));
  });

  test('a field holding a control character is a 400 naming it, and nothing is changed', async () => {
    const failures: string[] = [];
    const values = fc.sample(withControl, { numRuns: 6, seed: 40 });
    const audit = await t.db.selectFrom('audit_log').select('id').execute();
    for (const form of [...pages.values()].flatMap(formsOf)) {
      for (const [name] of form.fields) {
        for (const value of values) {
          const fields = Object.fromEntries(form.fields.map(([n, v]) => [n, n === name ? value : v]));
          const res = await clientFor(form.action).post(form.action, fields);
          if (res.status !== 400 || !res.body.includes(name))
            failures.push(`${res.status} for ${name}=${JSON.stringify(value)} to ${form.action}`);
        }
      }
    }
    expect(failures.slice(0, 8)).toEqual([]);
    expect(await t.db.selectFrom('audit_log').select('id').execute()).toEqual(audit);
  }, 120_000);

  test('an id in a form’s address or a link’s parameter holding a control character is a 400', async () => {
    const failures: string[] = [];
    const values = fc.sample(withControl, { numRuns: 6, seed: 41 });
    for (const form of [...pages.values()].flatMap(formsOf)) {
      const segments = form.action.split('/');
      for (const [i, segment] of segments.entries()) {
        if (!/^(\w+_\w+|\d+)$/.test(segment)) continue; // an id or an attempt's number
        for (const value of values) {
          const action = segments.map((s, j) => (j === i ? encodeURIComponent(value) : s)).join('/');
          const fields = Object.fromEntries(form.fields);
          const posted = await clientFor(form.action).post(action, fields);
          const read = await clientFor(form.action).get(action);
          for (const res of [posted, read])
            if (res.status !== 400) failures.push(`${res.status} for ${action}`);
        }
      }
    }
    for (const link of [...pages.values()].flatMap(linksWithQueries)) {
      const url = new URL(link, api.url);
      for (const name of url.searchParams.keys()) {
        for (const value of values) {
          const changed = new URL(url);
          changed.searchParams.set(name, value);
          const res = await owner.get(changed.pathname + changed.search);
          if (res.status !== 400 || !res.body.includes(name))
            failures.push(`${res.status} for ${changed.pathname + changed.search}`);
        }
      }
    }
    expect(failures.slice(0, 8)).toEqual([]);
  }, 120_000);

  test('no value of any field is a 500', async () => {
    const failures: string[] = [];
    const values = fc.sample(anyText, { numRuns: 8, seed: 42 });
    for (const form of [...pages.values()].flatMap(formsOf)) {
      for (const [name] of form.fields) {
        if (name === 'csrf') continue; // another token is a 403 before anything is read
        for (const value of values) {
          const fields = Object.fromEntries(form.fields.map(([n, v]) => [n, n === name ? value : v]));
          const res = await clientFor(form.action).post(form.action, fields);
          if (res.status >= 500)
            failures.push(`${res.status} for ${name}=${JSON.stringify(value)} to ${form.action}`);
        }
      }
    }
    expect(failures.slice(0, 8)).toEqual([]);
    expect(api.logs.text()).not.toMatch(/settings page error/);
  }, 120_000);

  test('one of our cookies holding a control character is a 400 naming it; another site’s is left alone', async () => {
    // A header may carry a tab, and C1 as bytes past ASCII; Node's client sends both.
    for (const cookie of ['trips_settings_session=a\tb', 'trips_settings_csrf=x\u0085']) {
      const res = await rawGet('/settings/sign-in', { cookie });
      expect([res.status, res.body.includes(cookie.split('=')[0]!)]).toEqual([400, true]);
    }
    expect((await rawGet('/settings/sign-in', { cookie: 'elsewhere=\u0085' })).status).toBe(200);
  });
});
