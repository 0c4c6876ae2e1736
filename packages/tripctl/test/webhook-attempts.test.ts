import { recordAttempt } from '@trips/db/webhook-attempts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { cli, cliJson, newAgencyFor, newWebhookFor } from './helpers.ts';

// `tripctl webhook attempts`: a webhook's delivery log, as the settings page lists it.

let t: TestDatabase;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestDatabase();
  env = { DATABASE_URL: t.url };
});
afterAll(() => t.drop());

const newAgency = () => newAgencyFor(env);
const newWebhook = (agencyId: string, ...extra: string[]) => newWebhookFor(env, agencyId, ...extra);

describe('webhook attempts', () => {
  test('lists recent attempts newest first, only of that webhook, up to --limit', async () => {
    const agencyId = await newAgency();
    const { id } = await newWebhook(agencyId);
    const other = await newWebhook(agencyId);
    const base = Date.parse('2030-03-01T10:00:00Z');
    const attempt = (
      n: number,
      minutes: number,
      outcome: { statusCode: number | null; error: string | null; responseHeaders?: string },
    ) =>
      recordAttempt(t.db, {
        webhookId: id,
        eventId: 'evt_first',
        eventType: 'trip.created',
        attempt: n,
        attemptedAt: new Date(base + minutes * 60_000),
        durationMs: 100 + n,
        responseBody: outcome.statusCode ? `answer ${n}` : null,
        ...outcome,
      });
    await attempt(1, 0, { statusCode: null, error: 'timeout' });
    await attempt(2, 1, { statusCode: 429, error: 'http_status', responseHeaders: 'retry-after: 1' });
    await attempt(3, 6, { statusCode: 200, error: null });
    await recordAttempt(t.db, {
      webhookId: other.id,
      eventId: 'evt_elsewhere',
      eventType: 'payment.paid',
      attempt: 1,
      attemptedAt: new Date(base + 10 * 60_000),
      durationMs: 5,
      statusCode: 204,
      error: null,
      responseBody: null,
    });

    const out = await cliJson<{ webhook_id: string; attempts: Record<string, unknown>[] }>(
      ['webhook', 'attempts', '--id', id],
      env,
    );
    expect(out.webhook_id).toBe(id);
    expect(out.attempts).toEqual([
      {
        id: expect.any(Number),
        attempted_at: '2030-03-01T10:06:00.000Z',
        event_id: 'evt_first',
        event_type: 'trip.created',
        attempt: 3,
        succeeded: true,
        status_code: 200,
        error: null,
        reason: 'delivered: answered 200',
        next_attempt: null,
        duration_ms: 103,
        response_body: 'answer 3',
      },
      expect.objectContaining({
        attempt: 2,
        status_code: 429,
        error: 'http_status',
        succeeded: false,
        reason: 'asked to wait: 429, Retry-After 1 s',
      }),
      expect.objectContaining({ attempt: 1, status_code: null, error: 'timeout', duration_ms: 101 }),
    ]);

    const limited = await cliJson<{ attempts: { attempt: number }[] }>(
      ['webhook', 'attempts', '--id', id, '--limit', '2'],
      env,
    );
    expect(limited.attempts.map((a) => a.attempt)).toEqual([3, 2]);

    // In words, as the settings page says them, times as everywhere (docs/wording.md).
    const human = await cli(['webhook', 'attempts', '--id', id], env);
    expect(human.code).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatch(/^3 delivery attempts of webhook whk_\w+ \(https:.*\), newest first:$/);
    expect(lines.slice(1).map((l) => l.replace(/\(#\d+\)$/, '(#n)'))).toEqual([
      '2030-03-01 10:06:00 UTC  evt_first  trip.created  attempt 3  103 ms  (#n)',
      '  delivered: answered 200',
      '2030-03-01 10:01:00 UTC  evt_first  trip.created  attempt 2  102 ms  (#n)',
      '  failed: asked to wait: 429, Retry-After 1 s',
      '2030-03-01 10:00:00 UTC  evt_first  trip.created  attempt 1  101 ms  (#n)',
      '  failed: no complete answer within 1 s: answer 2xx first, then do the work',
    ]);
    expect(human.stdout).not.toContain('evt_elsewhere');
  });

  test('a failing delivery tells its next attempt as stored; --failed shows failures only; --before pages back', async () => {
    const agencyId = await newAgency();
    const { id } = await newWebhook(agencyId);
    const base = Date.parse('2030-03-01T10:00:00Z');
    // As the dispatcher scheduled them: evt_4 due 97 s after it failed, evt_2 given up.
    const nextAttemptAt = (i: number) => (i === 4 ? new Date(base + i * 60_000 + 97_000) : null);
    for (let i = 0; i < 5; i++) {
      await recordAttempt(t.db, {
        nextAttemptAt: nextAttemptAt(i),
        webhookId: id,
        eventId: `evt_${i}`,
        eventType: 'trip.created',
        attempt: 1,
        attemptedAt: new Date(base + i * 60_000),
        durationMs: 7,
        statusCode: i % 2 ? 200 : null,
        error: i % 2 ? null : 'tls',
        errorDetail: i % 2 ? null : 'DEPTH_ZERO_SELF_SIGNED_CERT',
        responseBody: null,
      });
    }
    // tripctl reads no retry schedule: one set differently from the dispatcher's changes nothing.
    const failed = await cli(['webhook', 'attempts', '--id', id, '--failed', '--limit', '2'], {
      ...env,
      WEBHOOK_RETRY_DELAYS: '7m',
    });
    const lines = failed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^2 failed delivery attempts of webhook/);
    expect(lines[1]).toMatch(
      /^2030-03-01 10:04:00 UTC {2}evt_4 {2}trip.created {2}attempt 1 {2}7 ms {2}\(#\d+\)$/,
    );
    expect(lines[2]).toBe(
      '  failed: TLS: the certificate is not trusted (self-signed) (DEPTH_ZERO_SELF_SIGNED_CERT)',
    );
    expect(lines[3]).toBe('  next attempt: 2, due 2030-03-01 10:05:37 UTC');
    expect(lines[4]).toMatch(/^2030-03-01 10:02:00 UTC {2}evt_2 /);
    expect(lines[6]).toBe('  no more attempts: the retry window has passed');
    const json = await cliJson<{ attempts: { next_attempt: unknown }[] }>(
      ['webhook', 'attempts', id, '--failed', '--limit', '2'],
      env,
    );
    expect(json.attempts.map((a) => a.next_attempt)).toEqual([
      { number: 2, due_at: '2030-03-01T10:05:37.000Z' },
      { none: 'the retry window has passed' },
    ]);
    const before = /--before (\d+)$/.exec(lines.at(-1)!)![1]!;
    expect(lines.at(-1)).toBe(`Older: tripctl webhook attempts --id ${id} --failed --before ${before}`);
    const older = await cliJson<{ attempts: { event_id: string }[]; next_before: number | null }>(
      ['webhook', 'attempts', '--id', id, '--failed', '--before', before],
      env,
    );
    expect(older.attempts.map((a) => a.event_id)).toEqual(['evt_0']);
    expect(older.next_before).toBeNull();
    const bad = await cli(['webhook', 'attempts', '--id', id, '--before', 'x'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not an attempt number/);
  });

  test('a webhook without attempts says so', async () => {
    const agencyId = await newAgency();
    const { id } = await newWebhook(agencyId);
    expect(await cliJson(['webhook', 'attempts', '--id', id], env)).toEqual({
      webhook_id: id,
      state: 'active',
      attempts: [],
      next_before: null,
    });
    expect((await cli(['webhook', 'attempts', '--id', id], env)).stdout).toMatch(/No delivery attempts/);
  });

  test('an unknown webhook is an operational failure (exit 1)', async () => {
    const result = await cli(['webhook', 'attempts', '--id', 'whk_0000000000000000'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'error: no webhook whk_0000000000000000.\n' });
  });
});
