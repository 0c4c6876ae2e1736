import { sql } from 'kysely';
import type { DeliveryMessage } from '@trips/contracts';
import { recordAttempt } from '@trips/db/webhook-attempts';
import { waitFor, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, deliveriesStack, STACK_TRACE, type DeliveriesStack } from './helpers.ts';

// `tripctl webhook attempt` and `webhook resend`: the settings page's attempt detail and its
// "send this event again" button, from the platform team's side.

let stack: DeliveriesStack;
let t: TestDatabase;
let env: Record<string, string>;
let received: DeliveryMessage[];

beforeAll(async () => {
  stack = await deliveriesStack();
  ({ t, env, received } = stack);
});
afterAll(() => stack?.close());

const SIGNATURE = 't=1900000000,v1=3q2+7w==';

async function setup() {
  const agency = (await cliJson<{ id: string }>(['agency', 'create', '--name', 'Fairway Tours'], env)).id;
  const webhook = await cliJson<{ id: string; secret: string }>(
    [
      'webhook',
      'create',
      '--agency',
      agency,
      '--url',
      'https://hooks.fairway.example/',
      '--events',
      'trip.created',
    ],
    env,
  );
  return { agency, webhook };
}

async function recordEvent(agency: string, hoursAgo: number): Promise<string> {
  const r = await sql<{ id: string }>`
    INSERT INTO events (seq, id, agency_id, type, object_type, object_id, data, created_at)
    VALUES (nextval('events_seq'), gen_id('evt'), ${agency}, 'trip.created', 'trip', 'trp_A', '{"n":1}'::jsonb,
            now() - make_interval(hours => ${hoursAgo})) RETURNING id`.execute(t.db);
  return r.rows[0]!.id;
}

/** A failed attempt of the event, as the dispatcher records it; answers its number (#n). */
async function failedAttempt(webhookId: string, eventId: string, extra: { requestBody?: string } = {}) {
  await recordAttempt(t.db, {
    webhookId,
    eventId,
    eventType: 'trip.created',
    attempt: 2,
    attemptedAt: new Date(Date.now() - 60_000),
    durationMs: 137,
    statusCode: 503,
    error: 'http_status',
    responseBody: 'down for maintenance',
    responseHeaders: 'content-type: text/plain\nretry-after: 120',
    requestSignature: SIGNATURE,
    ...extra,
  });
  const page = await cliJson<{ attempts: { id: number }[] }>(['webhook', 'attempts', webhookId], env);
  return page.attempts[0]!.id;
}

const audits = (webhookId: string) =>
  t.db
    .selectFrom('audit_log')
    .selectAll()
    .where('object_id', '=', webhookId)
    .where('action', '=', 'webhook.redelivered')
    .execute();

describe('webhook attempt', () => {
  test('shows the attempt as the page does: body as sent, headers with the signature, the answer, never the secret', async () => {
    const { agency, webhook } = await setup();
    const eventId = await recordEvent(agency, 1);
    const n = await failedAttempt(webhook.id, eventId);

    const json = await cliJson<Record<string, any>>(['webhook', 'attempt', webhook.id, String(n)], env);
    expect(json).toMatchObject({
      webhook_id: webhook.id,
      id: n,
      event_id: eventId,
      attempt: 2,
      succeeded: false,
      reason: 'asked to wait: 503, Retry-After 120 s',
      request: {
        method: 'POST',
        url: 'https://hooks.fairway.example/',
        headers: {
          'Content-Type': 'application/json',
          'Service-Event-Id': eventId,
          'Service-Event-Type': 'trip.created',
          'Service-Signature': SIGNATURE,
        },
      },
      response: {
        status: 503,
        headers: 'content-type: text/plain\nretry-after: 120',
        body: 'down for maintenance',
        duration_ms: 137,
      },
    });
    expect(JSON.parse(json.request.body)).toMatchObject({
      id: eventId,
      type: 'trip.created',
      data: { n: 1 },
    });

    const human = await cli(['webhook', 'attempt', '--id', webhook.id, '--attempt', `#${n}`], env);
    expect({ code: human.code, stderr: human.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = human.stdout.split('\n');
    expect(lines[0]).toBe(`Attempt #${n} of webhook ${webhook.id}: attempt 2 of ${eventId} (trip.created)`);
    expect(lines[1]).toBe('  failed: asked to wait: 503, Retry-After 120 s');
    expect(lines).toContain(`  Service-Signature: ${SIGNATURE}`);
    expect(lines).toContain('  status 503');
    expect(lines).toContain('    retry-after: 120');
    expect(lines).toContain('    down for maintenance');
    expect(human.stdout).toContain(`"id":"${eventId}"`);
    expect(human.stdout).toMatch(/took 137 ms/);
    expect(lines).toContain(`Send this event again: tripctl webhook resend ${webhook.id} --attempt ${n}`);
    for (const out of [human.stdout, JSON.stringify(json)]) expect(out).not.toContain(webhook.secret);
  });

  test('a test event shows the body kept with its attempt', async () => {
    const { webhook } = await setup();
    const body = '{"id":"evt_test_abc","type":"trip.created"}';
    const n = await failedAttempt(webhook.id, 'evt_test_abc', { requestBody: body });
    const json = await cliJson<{ request: { body: string } }>(
      ['webhook', 'attempt', webhook.id, String(n)],
      env,
    );
    expect(json.request.body).toBe(body);
  });

  test('a missing, doubled or foreign attempt is a clear error with the usual exit codes', async () => {
    const { agency, webhook } = await setup();
    const other = await setup();
    const n = await failedAttempt(webhook.id, await recordEvent(agency, 1));
    const cases: [string[], number, RegExp][] = [
      [['webhook', 'attempt', webhook.id], 2, /which attempt\? Give its number/],
      [['webhook', 'attempt', webhook.id, String(n), '--attempt', String(n + 1)], 2, /two attempts/],
      [['webhook', 'attempt', webhook.id, 'x1'], 2, /'x1' is not an attempt number/],
      [['webhook', 'attempt', other.webhook.id, String(n)], 1, new RegExp(`no attempt ${n} of webhook`)],
      [['webhook', 'attempt', 'whk_0000000000000000', String(n)], 1, /webhook/],
    ];
    for (const [argv, code, message] of cases) {
      const result = await cli(argv, env);
      expect({ argv, code: result.code }).toEqual({ argv, code });
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(STACK_TRACE);
    }
  });
});

describe('webhook resend', () => {
  const queuedFor = (webhookId: string) => received.filter((m) => m.webhook_id === webhookId);

  test("by an attempt's number, as the page's button: that one event queued as attempt 1, audited as platform", async () => {
    const { agency, webhook } = await setup();
    const first = await recordEvent(agency, 2);
    const second = await recordEvent(agency, 1);
    const n = await failedAttempt(webhook.id, first);

    const sent = await cliJson<{ webhook_id: string; event: { id: string } }>(
      ['webhook', 'resend', webhook.id, '--attempt', String(n)],
      env,
    );
    expect(sent).toMatchObject({ webhook_id: webhook.id, event: { id: first } });
    await waitFor(() => queuedFor(webhook.id).length === 1, { timeoutMs: 5_000 });
    const human = await cli(['webhook', 'resend', '--id', webhook.id, '--event', second], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^Queued event ${second} \\(trip.created\\) again for webhook`));
    await waitFor(() => queuedFor(webhook.id).length === 2, { timeoutMs: 5_000 });

    expect(queuedFor(webhook.id).map((m) => [m.event.id, m.attempt, m.agency_id])).toEqual([
      [first, 1, agency],
      [second, 1, agency],
    ]);
    expect(queuedFor(webhook.id)[0]!.event).toMatchObject({ type: 'trip.created', data: { n: 1 } });
    expect((await audits(webhook.id)).map((r) => [r.actor, r.actor_user_id, r.details])).toEqual([
      ['platform', null, { event_id: first, events: 1 }],
      ['platform', null, { event_id: second, events: 1 }],
    ]);
  });

  test('test events, events past EVENT_RETENTION and a switched-off webhook are refused (exit 2); nothing queued or audited', async () => {
    const { agency, webhook } = await setup();
    const old = await recordEvent(agency, 72);
    const testAttempt = await failedAttempt(webhook.id, 'evt_test_abc', { requestBody: '{}' });
    const recent = await recordEvent(agency, 1);
    const cases: [string[], RegExp][] = [
      [['--event', 'evt_test_abc'], /a test event is not kept, so it cannot be sent again/],
      [['--attempt', String(testAttempt)], /a test event is not kept/],
      [
        ['--event', old],
        /is not in your agency's event record: events are kept 48 hours \(EVENT_RETENTION\)/,
      ],
      [['--event', 'trp_A'], /'trp_A' is not an event id/],
      [[], /which event\? Give one of --attempt <n> and --event/],
      [['--event', recent, '--attempt', String(testAttempt)], /which event\?/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(['webhook', 'resend', webhook.id, ...args], env);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(STACK_TRACE);
    }
    await cli(['webhook', 'disable', webhook.id], env);
    const off = await cli(['webhook', 'resend', webhook.id, '--event', recent], env);
    expect(off.code).toBe(2);
    expect(off.stderr).toMatch(/is switched off; switch it back on first/);
    expect(await audits(webhook.id)).toEqual([]);
    expect(queuedFor(webhook.id)).toEqual([]);
  });
});
