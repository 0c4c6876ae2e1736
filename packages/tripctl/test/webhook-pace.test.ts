import { formatTime } from '@trips/contracts';
import { recordAttempt } from '@trips/db/webhook-attempts';
import { pauseWebhook } from '@trips/db/webhook-pace';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, newAgencyFor, newWebhookFor, type WebhookJson } from './helpers.ts';

// The receiver's pace from the platform team's side (D10): `--rate-limit` on create and update,
// the limit and a receiver's pause in `webhook list`, as the settings page shows them.

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

const rateLimitOf = async (id: string) =>
  (await t.db.selectFrom('webhooks').select('rate_limit').where('id', '=', id).executeTakeFirstOrThrow())
    .rate_limit;
const list = async (agencyId: string) => {
  const json = await cliJson<{ webhooks: WebhookJson[] }>(['webhook', 'list', '--agency', agencyId], env);
  const human = await cli(['webhook', 'list', '--agency', agencyId], env);
  expect(human.code).toBe(0);
  return { webhooks: json.webhooks, lines: human.stdout.split('\n') };
};

test('--rate-limit on create and update, n or off: stored, printed, listed, audited as platform', async () => {
  const agencyId = await newAgencyFor(env);
  const created = await newWebhookFor(env, agencyId, '--rate-limit', '20');
  expect(created).toMatchObject({ rate_limit: 20, paused: null });
  expect(await rateLimitOf(created.id)).toBe(20);
  const human = await cli(
    ['webhook', 'create', '--agency', agencyId, '--url', 'https://h.example/', '--events', 'all'],
    env,
  );
  expect(human.stdout).toContain('\n  rate limit: none\n');

  let listed = await list(agencyId);
  expect(listed.webhooks.map((w) => w.rate_limit)).toEqual([20, null]);
  expect(listed.lines).toContain('  rate limit: at most 20 deliveries a second');
  expect(listed.lines).toContain('  rate limit: none');

  const updated = await cli(['webhook', 'update', created.id, '--rate-limit', '5'], env);
  expect(updated.code).toBe(0);
  expect(updated.stdout).toContain('\n  rate limit: at most 5 deliveries a second\n');
  expect(await rateLimitOf(created.id)).toBe(5);
  expect(await cliJson(['webhook', 'update', created.id, '--rate-limit', 'off'], env)).toMatchObject({
    rate_limit: null,
  });
  expect(await rateLimitOf(created.id)).toBeNull();
  listed = await list(agencyId);
  expect(listed.webhooks.map((w) => w.rate_limit)).toEqual([null, null]);

  const audit = await t.db
    .selectFrom('audit_log')
    .select(['action', 'actor', 'details'])
    .where('object_id', '=', created.id)
    .orderBy('id')
    .execute();
  expect(audit).toEqual([
    expect.objectContaining({ action: 'webhook.created', actor: 'platform' }),
    { action: 'webhook.updated', actor: 'platform', details: { rate_limit: { from: 20, to: 5 } } },
    { action: 'webhook.updated', actor: 'platform', details: { rate_limit: { from: 5, to: null } } },
  ]);
  expect(audit[0]!.details).toMatchObject({ rate_limit: 20 });
});

test("webhook list shows a receiver's pause: until when, and what it answered", async () => {
  const agencyId = await newAgencyFor(env);
  const asked = await newWebhookFor(env, agencyId, '--url', 'https://a.example/asked');
  const unexplained = await newWebhookFor(env, agencyId, '--url', 'https://a.example/unexplained');
  const calm = await newWebhookFor(env, agencyId, '--url', 'https://a.example/calm');
  // As the dispatcher stores them: a 429 with Retry-After: 60, and a 503 without one, which it
  // answered with a pause of its own choosing.
  await pauseWebhook(t.db, asked.id, { forMs: 60_000, status: 429, retryAfterMs: 60_000 });
  await recordAttempt(t.db, {
    webhookId: unexplained.id,
    eventId: 'evt_1',
    eventType: 'trip.created',
    attempt: 1,
    attemptedAt: new Date(),
    durationMs: 0,
    statusCode: 503,
    error: 'http_status',
    responseBody: null,
    responseHeaders: 'content-length: 0',
  });
  await pauseWebhook(t.db, unexplained.id, { forMs: 4_000, status: 503, retryAfterMs: null });
  const until = new Map(
    (await t.db.selectFrom('webhook_pace').select(['webhook_id', 'paused_until']).execute()).map((r) => [
      r.webhook_id,
      r.paused_until!,
    ]),
  );

  const { webhooks, lines } = await list(agencyId);
  expect(webhooks.map((w) => [w.id, w.paused])).toEqual([
    [
      asked.id,
      {
        until: until.get(asked.id)!.toISOString(),
        status: 429,
        retry_after_ms: 60_000,
        reason: 'the receiver answered 429 with Retry-After 60 s',
      },
    ],
    [
      unexplained.id,
      {
        until: until.get(unexplained.id)!.toISOString(),
        status: 503,
        retry_after_ms: null,
        reason: 'the receiver answered 503 without a Retry-After; we wait 4 s',
      },
    ],
    [calm.id, null],
  ]);
  const after = (id: string) => lines[lines.findIndex((l) => l.startsWith(id)) + 3];
  expect(after(asked.id)).toBe(
    `  paused until ${formatTime(until.get(asked.id)!)}: the receiver answered 429 with Retry-After 60 s`,
  );
  expect(after(unexplained.id)).toBe(
    `  paused until ${formatTime(until.get(unexplained.id)!)}: the receiver answered 503 without a Retry-After; we wait 4 s`,
  );
  expect(lines.filter((l) => l.includes('paused until'))).toHaveLength(2);
});
