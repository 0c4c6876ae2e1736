import { sql } from 'kysely';
import { recordAttempt, type NewAttempt } from '@trips/db/webhook-attempts';
import { pauseWebhook } from '@trips/db/webhook-pace';
import type { TestDatabase } from '@trips/testkit';
import type { Settings } from '../src/index.ts';
import {
  auditOf as auditRowsOf,
  newAgencyIn,
  refused,
  settingsStack,
  type SettingsStack,
} from './support.ts';

// The receiver's pace as owners set and see it (D10): the owner's rate limit, the pause a receiver
// asked for, and a failing delivery's next attempt as the dispatcher stored it.

let stack: SettingsStack;
let t: TestDatabase;
let settings: Settings;

beforeAll(async () => {
  stack = await settingsStack();
  ({ t, settings } = stack);
});
afterAll(() => stack?.close());

const auditOf = (agencyId: string) => auditRowsOf(t, agencyId);
const rateLimitOf = async (id: string) =>
  (await t.db.selectFrom('webhooks').select('rate_limit').where('id', '=', id).executeTakeFirstOrThrow())
    .rate_limit;

async function newWebhook(rateLimit?: number | null) {
  const a = await newAgencyIn(t);
  const { webhook } = await settings.createWebhook(a.owner, {
    agencyId: a.id,
    url: 'https://hooks.fairway.example/t',
    eventTypes: ['trip.created'],
    ...(rateLimit !== undefined && { rateLimit }),
  });
  return { a, webhook };
}

describe("the owner's rate limit", () => {
  test('set on create, changed and removed on update, shown in every view: each change audited', async () => {
    const { a, webhook } = await newWebhook(20);
    expect(webhook).toMatchObject({ rate_limit: 20, paused: null });
    expect(await rateLimitOf(webhook.id)).toBe(20);
    expect((await settings.listWebhooks(a.owner, a.id))[0]).toMatchObject({ rate_limit: 20 });
    expect(await settings.getWebhook(a.owner, webhook.id)).toMatchObject({ rate_limit: 20 });

    expect(await settings.updateWebhook(a.owner, webhook.id, { rateLimit: 5 })).toMatchObject({
      rate_limit: 5,
    });
    // The same limit again changes nothing, and is not audited.
    await settings.updateWebhook(a.owner, webhook.id, { rateLimit: 5 });
    // Another change leaves the limit alone.
    await settings.updateWebhook(a.owner, webhook.id, { description: 'CRM' });
    expect(await rateLimitOf(webhook.id)).toBe(5);
    expect(await settings.updateWebhook(a.owner, webhook.id, { rateLimit: null })).toMatchObject({
      rate_limit: null,
    });
    expect(await rateLimitOf(webhook.id)).toBeNull();

    const audit = await auditOf(a.id);
    expect(audit.map((r) => [r.action, r.details])).toEqual([
      [
        'webhook.created',
        { url: 'https://hooks.fairway.example/t', event_types: ['trip.created'], rate_limit: 20 },
      ],
      ['webhook.updated', { rate_limit: { from: 20, to: 5 } }],
      ['webhook.updated', { description_changed: true }],
      ['webhook.updated', { rate_limit: { from: 5, to: null } }],
    ]);
  });

  test('without one, a webhook has none', async () => {
    const { a, webhook } = await newWebhook();
    expect(webhook.rate_limit).toBeNull();
    expect((await auditOf(a.id))[0]!.details).not.toHaveProperty('rate_limit');
  });

  test.each([0, 1001, 1.5, -1, Number.NaN, Infinity])(
    '%d is refused as invalid on create and update; nothing changes',
    async (rateLimit) => {
      const { a, webhook } = await newWebhook(10);
      const before = await auditOf(a.id);
      const rule =
        /^a rate limit is a whole number of deliveries a second from 1 to 1000, or off for none\.$/;
      await refused(
        settings.createWebhook(a.owner, {
          agencyId: a.id,
          url: 'https://hooks.fairway.example/u',
          eventTypes: ['trip.created'],
          rateLimit,
        }),
        'invalid',
        rule,
      );
      await refused(settings.updateWebhook(a.owner, webhook.id, { rateLimit }), 'invalid', rule);
      expect(await settings.listWebhooks(a.owner, a.id)).toHaveLength(1);
      expect(await rateLimitOf(webhook.id)).toBe(10);
      expect(await auditOf(a.id)).toEqual(before);
    },
  );
});

describe("the receiver's pause", () => {
  test('a paused webhook says until when and why, in every view; an ended pause is not shown', async () => {
    const { a, webhook } = await newWebhook();
    const { webhook: other } = await settings.createWebhook(a.owner, {
      agencyId: a.id,
      url: 'https://hooks.fairway.example/other',
      eventTypes: ['trip.created'],
    });
    // As the dispatcher stores it after a 429 with Retry-After: 90.
    await pauseWebhook(t.db, webhook.id, { forMs: 90_000, status: 429, retryAfterMs: 90_000 });
    const { paused_until: until } = await t.db
      .selectFrom('webhook_pace')
      .select('paused_until')
      .where('webhook_id', '=', webhook.id)
      .executeTakeFirstOrThrow();
    const paused = {
      until,
      status: 429,
      retry_after_ms: 90_000,
      reason: 'the receiver answered 429 with Retry-After 90 s',
    };
    const listed = await settings.listWebhooks(a.owner, a.id);
    expect(listed.map((w) => [w.id, w.paused])).toEqual([
      [webhook.id, paused],
      [other.id, null],
    ]);
    expect((await settings.getWebhook(a.owner, webhook.id)).paused).toEqual(paused);
    expect((await settings.listAttempts(a.owner, webhook.id)).webhook.paused).toEqual(paused);
    expect((await settings.updateWebhook(a.owner, webhook.id, { rateLimit: 3 })).paused).toEqual(paused);
    expect((await settings.setWebhookEnabled(a.owner, webhook.id, false)).paused).toEqual(paused);

    await sql`UPDATE webhook_pace SET paused_until = now() - interval '1 second'`.execute(t.db);
    expect((await settings.getWebhook(a.owner, webhook.id)).paused).toBeNull();
  });

  test('without a Retry-After: how long the dispatcher chose to wait, from the answer', async () => {
    const { a, webhook } = await newWebhook();
    await recordAttempt(t.db, {
      webhookId: webhook.id,
      eventId: 'evt_paused',
      eventType: 'trip.created',
      attempt: 1,
      attemptedAt: new Date(),
      durationMs: 0,
      statusCode: 503,
      error: 'http_status',
      responseBody: null,
      responseHeaders: 'content-type: text/plain',
    });
    await pauseWebhook(t.db, webhook.id, { forMs: 30_000, status: 503, retryAfterMs: null });
    expect((await settings.getWebhook(a.owner, webhook.id)).paused).toMatchObject({
      status: 503,
      retry_after_ms: null,
      reason: 'the receiver answered 503 without a Retry-After; we wait 30 s',
    });
    const [attempt] = (await settings.listAttempts(a.owner, webhook.id)).attempts;
    expect(attempt!.reason).toBe('asked to wait: 503, no Retry-After');
  });
});

describe("a failing delivery's next attempt is read as the dispatcher stored it", () => {
  const attempt = (webhookId: string, eventId: string, extra: Partial<NewAttempt>) =>
    recordAttempt(t.db, {
      webhookId,
      eventId,
      eventType: 'trip.created',
      attempt: 1,
      attemptedAt: new Date('2030-03-01T10:00:00Z'),
      durationMs: 5,
      statusCode: 500,
      error: 'http_status',
      responseBody: null,
      ...extra,
    });

  test('due when stored; without a due time the window has passed; switched off, none', async () => {
    const { a, webhook } = await newWebhook();
    // Not on any schedule the settings module could work out: only the stored time tells it.
    const dueAt = new Date('2030-03-01T10:07:13.250Z');
    await attempt(webhook.id, 'evt_due', { attempt: 3, nextAttemptAt: dueAt });
    await attempt(webhook.id, 'evt_given_up', { attempt: 9, nextAttemptAt: null });
    await attempt(webhook.id, 'evt_followed', { nextAttemptAt: dueAt });
    await attempt(webhook.id, 'evt_followed', { attempt: 2, statusCode: 200, error: null });

    const next = async () =>
      Object.fromEntries(
        (await settings.listAttempts(a.owner, webhook.id)).attempts.map((e) => [
          `${e.event_id}#${e.attempt}`,
          e.next,
        ]),
      );
    expect(await next()).toEqual({
      'evt_due#3': { number: 4, due_at: dueAt },
      'evt_given_up#9': { none: 'the retry window has passed' },
      'evt_followed#1': null,
      'evt_followed#2': null,
    });
    await settings.setWebhookEnabled(a.owner, webhook.id, false);
    expect(await next()).toMatchObject({
      'evt_due#3': { none: 'the webhook is switched off' },
      'evt_given_up#9': { none: 'the webhook is switched off' },
    });
  });
});
