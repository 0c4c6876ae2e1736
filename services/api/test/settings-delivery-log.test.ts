import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { sql } from 'kysely';
import { queueNames, topology } from '@trips/broker';
import { formatTime } from '@trips/contracts';
import { ensureEventPartitions } from '@trips/db/events';
import { recordAttempts, type NewAttempt } from '@trips/db/webhook-attempts';
import { createWebhook } from '@trips/db/webhooks';
import { readConfig, startDispatcherService, type DispatcherService } from '@trips/dispatcher';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  randomAmqpPrefix,
  startReceiver,
  waitFor,
  type Answer,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { agencyWithPeople, FormClient, type People } from './settings-support.ts';
import { startTestApi } from './support.ts';

// The delivery log answers "why" (issue 26), over HTTP against the real API, dispatcher, RabbitMQ
// and Postgres, delivering to local HTTPS receivers that fail on purpose: each failure in words,
// when the next attempt is due (as the dispatcher stored it), a receiver's pause, an attempt's
// request and answer in full, all or failed only, paging past 50, one event sent again, and each
// webhook's health.

const RETRY = 30_000;
let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let dispatcher: DispatcherService;
let receiver: TestReceiver;
let selfSigned: TestReceiver;
let people: People;
let owner: FormClient;
const prefix = randomAmqpPrefix();

beforeAll(async () => {
  t = await createTestDatabase();
  const ca = await createTestCa();
  receiver = await startReceiver(ca);
  selfSigned = await startReceiver(ca.untrusted);
  dispatcher = await startDispatcherService(
    readConfig({
      DATABASE_URL: t.url,
      AMQP_URL: amqpUrl,
      AMQP_PREFIX: prefix,
      DISPATCHER_HEALTH_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_TIMEOUT: '1s',
      DISPATCHER_STOP_TIMEOUT: '5s',
      WEBHOOK_RETRY_DELAYS: `${RETRY / 1000}s`,
      WEBHOOK_FAILURE_WINDOW: '10m',
    }),
    new LogCapture().logger,
  );
  // The API reads no retry schedule: one set unlike the dispatcher's changes nothing it shows.
  api = await startTestApi(t, {
    AMQP_PREFIX: prefix,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_DELAYS: '7m',
    WEBHOOK_FAILURE_WINDOW: '1h',
  });
  people = await agencyWithPeople(t.db, 'Fairway Tours');
  owner = new FormClient(api.url);
  await owner.signIn(people.owner.email);
  await owner.get('/settings');
}, 60_000);

afterAll(async () => {
  await api?.stop();
  await dispatcher?.stop();
  await receiver?.close();
  await selfSigned?.close();
  const names = topology(prefix, [RETRY]);
  await deleteAmqpObjects({
    queues: queueNames(names),
    exchanges: [names.eventsExchange, names.expressExchange],
  });
  await t?.drop();
});

const unescape = (text: string) =>
  text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&');
/** The text of every <pre class="block"> of a page, in order. */
const blocks = (body: string) =>
  [...body.matchAll(/<pre class="block">([\s\S]*?)<\/pre>/g)].map((m) => unescape(m[1]!));

/** Adds a webhook through the page (post, redirect, the secret shown once); answers its id and secret. */
async function addWebhook(url: string, events = ['trip.created', 'trip.status_changed']) {
  const shown = await owner.follow(await owner.post('/settings/webhooks', { url, events }));
  const secret = /<output aria-label="[^"]*">([^<]+)<\/output>/.exec(shown.body)![1]!;
  const id = /href="\/settings\/webhooks\/(whk_\w+)"/.exec(shown.body)![1]!;
  return { id, secret };
}

const attemptsOf = (webhookId: string) =>
  t.db.selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', webhookId).orderBy('id').execute();

async function sendTest(webhookId: string) {
  await owner.get(`/settings/webhooks/${webhookId}`);
  const sent = await owner.post(`/settings/webhooks/${webhookId}/test`, {});
  expect(sent.headers.get('location')).toBe(`/settings/webhooks/${webhookId}?notice=test-sent`);
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('each failed attempt says why in words, and when the next attempt is due (as stored) and which it is', async () => {
  const ASKED_MS = 120_000;
  receiver.answer = (r): Answer =>
    r.path === '/moved'
      ? { status: 301, headers: { location: 'https://elsewhere.example/' } }
      : r.path === '/slow'
        ? { status: 200, delayMs: 3000 }
        : r.path === '/busy'
          ? { status: 429, headers: { 'retry-after': String(ASKED_MS / 1000) } }
          : { status: 500, body: 'maintenance' };
  const busy = receiver.url.replace('/hooks', '/busy');
  const cases = [
    [receiver.url.replace('/hooks', '/moved'), 'answered 301: redirects are not followed'],
    [selfSigned.url, 'TLS: the certificate is not trusted (self-signed)'],
    [`https://127.0.0.1:${await closedPort()}/hooks`, 'connection refused'],
    [receiver.url.replace('/hooks', '/slow'), 'no complete answer within 1 s'],
    [receiver.url, 'answered 500 Internal Server Error: only a 2xx answer counts as delivered'],
    // Longer than the lane's pause: a failure on the schedule, not retried before the receiver asked.
    [busy, 'asked to wait: 429, Retry-After 120 s'],
  ] as const;
  const webhooks = await Promise.all(cases.map(([url]) => addWebhook(url)));
  for (const w of webhooks) await sendTest(w.id);

  for (const [i, [, words]] of cases.entries()) {
    const id = webhooks[i]!.id;
    const [attempt] = await waitFor(async () => ((await attemptsOf(id)).length ? attemptsOf(id) : null), {
      timeoutMs: 20_000,
      what: `the attempt to ${cases[i]![0]}`,
    });
    const page = await owner.get(`/settings/webhooks/${id}`);
    expect(unescape(page.body)).toContain(words);
    // Due by the dispatcher's schedule, or no sooner than the receiver asked; the page shows it as
    // stored, not by the API's own (different) schedule.
    const due = attempt!.next_attempt_at!;
    const after = due.getTime() - attempt!.attempted_at.getTime();
    if (cases[i]![0] === busy) expect(after).toBeGreaterThanOrEqual(ASKED_MS);
    else expect(after).toBe(RETRY);
    expect(page.body).toContain(`attempt 2, due <time datetime="${due.toISOString()}">`);
    expect(unescape(page.body.replace(/<[^>]*>/g, ''))).toContain(`attempt 2, due ${formatTime(due)}`);
    // The same words in tripctl come from the same module (packages/tripctl/test/webhook-attempts.test.ts).
  }

  // The receiver that asked to wait: the webhook is paused until then, on its page and the overview.
  const pausedId = webhooks.at(-1)!.id;
  const pace = await t.db
    .selectFrom('webhook_pace')
    .selectAll()
    .where('webhook_id', '=', pausedId)
    .executeTakeFirstOrThrow();
  expect(pace).toMatchObject({ pause_status: 429, pause_retry_after_ms: ASKED_MS });
  const until = formatTime(pace.paused_until!);
  const text = (html: string) => unescape(html.replace(/<[^>]*>/g, ''));
  const page = await owner.get(`/settings/webhooks/${pausedId}`);
  expect(page.body).toContain(`<time datetime="${pace.paused_until!.toISOString()}">`);
  expect(text(page.body)).toContain(
    `paused until ${until}: the receiver answered 429 with Retry-After 120 s`,
  );
  const overview = await owner.get('/settings');
  const row = overview.body.split(`webhooks/${pausedId}"`)[1]!.split('</tr>')[0]!;
  expect(text(row)).toContain(`paused until ${until}`);
  for (const w of webhooks.slice(0, -1)) {
    expect((await owner.get(`/settings/webhooks/${w.id}`)).body).not.toContain('paused until');
  }
}, 60_000);

test('an attempt in full: the body and headers as sent (a signature that verifies, never the secret) and the answer', async () => {
  receiver.answer = () => ({ status: 202, headers: { 'x-receiver': 'yes' }, body: 'é'.repeat(700) });
  const { id, secret } = await addWebhook(receiver.url);
  // A recorded event, redelivered: its body is rebuilt from the event record, byte for byte.
  await ensureEventPartitions(t.db, new Date(Date.now() - 86_400_000), 3);
  const recorded = await sql<{ id: string }>`
    INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
    VALUES (nextval('events_seq'), gen_id('evt'), ${people.agencyId}, 'trip.status_changed', 'trip', 'trp_A',
            '{"to": "confirmed", "from": "planning"}'::jsonb, now() - interval '30 minutes')
    RETURNING id`.execute(t.db);
  const eventId = recorded.rows[0]!.id;
  await owner.get(`/settings/webhooks/${id}`);
  const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
  await owner.post(`/settings/webhooks/${id}/redeliver`, { since });
  await sendTest(id);
  const requests = await waitFor(
    () => (receiver.requests.filter((r) => r.path === '/hooks').length >= 2 ? receiver.requests : null),
    {
      timeoutMs: 15_000,
      what: 'both deliveries',
    },
  );
  const attempts = await waitFor(async () => ((await attemptsOf(id)).length === 2 ? attemptsOf(id) : null), {
    timeoutMs: 15_000,
    what: 'both attempts recorded',
  });

  for (const attempt of attempts) {
    const sent = requests.find((r) => r.headers['service-event-id'] === attempt.event_id)!;
    const detail = await owner.get(`/settings/webhooks/${id}/attempts/${attempt.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).not.toContain(secret);
    // The body indented for reading, then exactly as sent (a click away): what the signature covers.
    const [headers, indented, body, answerHeaders, answerBody] = blocks(detail.body);
    expect(indented).toBe(JSON.stringify(JSON.parse(sent.body), null, 2));
    expect(body).toBe(sent.body);
    const signature = /^Service-Signature: (.*)$/m.exec(headers!)![1]!;
    expect(signature).toBe(sent.headers['service-signature']);
    const [, ts, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signature)!;
    expect(createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')).toBe(v1);
    expect(headers).toContain(`Service-Event-Id: ${attempt.event_id}\n`);
    expect(headers).toContain('User-Agent: TripService-Webhooks/1');
    expect(detail.body).toContain('Status <strong>202</strong>');
    expect(answerHeaders).toMatch(/^x-receiver: yes$/im);
    // The first KiB: 512 two-byte characters.
    expect(answerBody).toBe('é'.repeat(512));
    expect(unescape(detail.body)).toContain('delivered: answered 202');
  }
  expect(attempts.map((a) => a.event_id)).toContain(eventId);
}, 60_000);

function seeded(
  webhookId: string,
  n: number,
  at: (i: number) => Date,
  ok: (i: number) => boolean,
): NewAttempt[] {
  return Array.from({ length: n }, (_, i) => ({
    webhookId,
    eventId: `evt_seed${i}`,
    eventType: 'trip.created',
    attempt: 1,
    attemptedAt: at(i),
    durationMs: 5,
    statusCode: ok(i) ? 200 : 500,
    error: ok(i) ? null : 'http_status',
    responseBody: null,
  }));
}

/** Every attempt id the log lists, following "Older attempts" from `path` to the last page. */
async function walkLog(path: string): Promise<{ ids: number[]; pages: number[] }> {
  const ids: number[] = [];
  const pages: number[] = [];
  let next: string | undefined = path;
  while (next) {
    const page = await owner.get(next);
    const found = [...page.body.matchAll(/attempts\/(\d+)" aria-label="Details/g)].map((m) => Number(m[1]));
    ids.push(...found);
    pages.push(found.length);
    next = /href="([^"]+)"\s*>Older attempts/
      .exec(page.body)?.[1]
      ?.replaceAll('&amp;', '&')
      .replace('#log', '');
  }
  return { ids, pages };
}

test('the log shows all attempts or the failed ones, 50 a page, and pages back past the last 50', async () => {
  const webhook = await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://hooks.example/paging',
    eventTypes: ['trip.created'],
  });
  const id = webhook.webhook.id;
  const start = Date.now() - 3600_000;
  // Three share each second, so a page ends inside a second: the tie-break on the id counts.
  await recordAttempts(
    t.db,
    seeded(
      id,
      120,
      (i) => new Date(start + Math.floor(i / 3) * 1000),
      (i) => i % 3 !== 0,
    ),
  );
  const rows = await attemptsOf(id);
  const newestFirst = rows
    .sort((x, y) => y.attempted_at.getTime() - x.attempted_at.getTime() || y.id - x.id)
    .map((r) => r.id);

  const all = await walkLog(`/settings/webhooks/${id}`);
  expect(all.pages).toEqual([50, 50, 20]);
  expect(all.ids).toEqual(newestFirst);

  const failed = await walkLog(`/settings/webhooks/${id}?log=failed`);
  expect(failed.pages).toEqual([40]);
  expect(failed.ids).toEqual(rows.filter((r) => !r.succeeded).map((r) => r.id));
  const page = await owner.get(`/settings/webhooks/${id}?log=failed`);
  expect(page.body).toMatch(/href="[^"]*log=failed#log"\s+aria-current="page"/);
  expect(page.body).not.toContain('>Delivered<');
});

test('"send this event again" re-sends one recorded event as a new delivery, audited like a redelivery', async () => {
  receiver.answer = () => ({ status: 200, body: 'ok' });
  const { id } = await addWebhook(receiver.url);
  await ensureEventPartitions(t.db, new Date(Date.now() - 86_400_000), 3);
  const recorded = await sql<{ id: string }>`
    INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
    VALUES (nextval('events_seq'), gen_id('evt'), ${people.agencyId}, 'trip.created', 'trip', 'trp_B',
            '{}'::jsonb, now() - interval '5 minutes')
    RETURNING id`.execute(t.db);
  const eventId = recorded.rows[0]!.id;
  await owner.get(`/settings/webhooks/${id}`);
  await owner.post(`/settings/webhooks/${id}/redeliver`, {
    since: new Date(Date.now() - 600_000).toISOString().slice(0, 16),
  });
  const [first] = await waitFor(async () => ((await attemptsOf(id)).length ? attemptsOf(id) : null), {
    timeoutMs: 15_000,
    what: 'the first delivery',
  });
  const audits = async () =>
    t.db
      .selectFrom('audit_log')
      .selectAll()
      .where('object_id', '=', id)
      .where('action', '=', 'webhook.redelivered')
      .execute();
  const auditedBefore = (await audits()).length;

  await owner.get(`/settings/webhooks/${id}/attempts/${first!.id}`);
  const again = await owner.post(`/settings/webhooks/${id}/attempts/${first!.id}/send-again`, {});
  expect(again.headers.get('location')).toBe(
    `/settings/webhooks/${id}/attempts/${first!.id}?notice=sent-again`,
  );
  const second = await waitFor(async () => ((await attemptsOf(id)).length === 2 ? attemptsOf(id) : null), {
    timeoutMs: 15_000,
    what: 'the delivery sent again',
  });
  expect(second.map((a) => [a.event_id, a.attempt])).toEqual([
    [eventId, 1],
    [eventId, 1],
  ]);
  expect(receiver.requests.filter((r) => r.headers['service-event-id'] === eventId)).toHaveLength(2);
  const audited = await audits();
  expect(audited).toHaveLength(auditedBefore + 1);
  expect(audited.at(-1)).toMatchObject({
    actor: people.owner.email,
    details: { event_id: eventId, events: 1 },
  });

  // A test event is in no record: refused with the reason, nothing sent, nothing audited.
  await sendTest(id);
  const tested = await waitFor(
    async () => (await attemptsOf(id)).find((a) => a.event_id.startsWith('evt_test_')) ?? null,
    {
      timeoutMs: 15_000,
      what: 'the test delivery',
    },
  );
  await owner.get(`/settings/webhooks/${id}/attempts/${tested.id}`);
  const refused = await owner.post(`/settings/webhooks/${id}/attempts/${tested.id}/send-again`, {});
  expect(refused.status).toBe(400);
  expect(unescape(refused.body)).toContain('a test event is not kept, so it cannot be sent again');
  expect(await audits()).toHaveLength(auditedBefore + 1);

  // Another agency's attempt, or one of another webhook, is not there.
  const other = await agencyWithPeople(t.db, 'Birdie Travel');
  const stranger = new FormClient(api.url);
  await stranger.signIn(other.owner.email);
  expect((await stranger.get(`/settings/webhooks/${id}/attempts/${first!.id}`)).status).toBe(404);
  const { id: mine } = await addWebhook(receiver.url);
  expect((await owner.get(`/settings/webhooks/${mine}/attempts/${first!.id}`)).status).toBe(404);
  expect((await owner.get(`/settings/webhooks/${id}/attempts/x1`)).status).toBe(404);
}, 60_000);

test('each webhook’s health: per hour over 24 hours and per day over 7, drawn as SVG, with the numbers', async () => {
  const webhook = await createWebhook(t.db, {
    agencyId: people.agencyId,
    url: 'https://hooks.example/health',
    eventTypes: ['trip.created'],
  });
  const id = webhook.webhook.id;
  const now = Date.now();
  const hour = Math.floor(now / 3600_000) * 3600_000 - 3 * 3600_000;
  const twoDays = Math.floor(now / 86_400_000) * 86_400_000 - 2 * 86_400_000 + 60_000;
  await recordAttempts(t.db, [
    ...seeded(
      id,
      4,
      () => new Date(hour + 60_000),
      (i) => i !== 0,
    ),
    ...seeded(
      id,
      2,
      () => new Date(twoDays),
      () => false,
    ),
  ]);
  const page = await owner.get(`/settings/webhooks/${id}`);
  expect(page.body).toContain('<svg');
  expect(page.body.match(/<g>/g)).toHaveLength(24 + 7);
  const hourLabel = `${new Date(hour).toISOString().slice(0, 13).replace('T', ' ')}:00 UTC`;
  expect(page.body).toContain(`<title>${hourLabel}: 4 attempts, 1 failed</title>`);
  expect(page.body).toContain(
    `<title>${new Date(twoDays).toISOString().slice(0, 10)}: 2 attempts, 2 failed</title>`,
  );
  expect(page.body).toMatch(/<strong>75%<\/strong> delivered\s*\(3 of 4 attempts; 1 failed\)/);
  expect(page.body).toMatch(/<strong>50%<\/strong> delivered\s*\(3 of 6 attempts; 3 failed\)/);

  const overview = await owner.get('/settings');
  const row = new RegExp(`webhooks/${id}"[\\s\\S]*?data-label="Delivered, 24 h">\\s*75%\\s*<`);
  expect(overview.body).toMatch(row);
});
