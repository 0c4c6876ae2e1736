import { eventRecord, isTestEventId, type EventSource } from '@trips/contracts';
import type { WebhookAttemptRow } from '@trips/db';
import { findRecordedEvent } from '@trips/db/events';
import {
  attemptCountsSince,
  attemptHistogram,
  findWebhookAttempt,
  listWebhookAttempts,
  type ListedAttempt,
} from '@trips/db/webhook-attempts';
import { listWebhooks } from '@trips/db/webhooks';
import { authorize, type Actor } from './access.ts';
import { describeAttempt } from './attempt-words.ts';
import type { SettingsContext } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { findWebhook, viewOf, type WebhookView } from './webhooks.ts';

// The delivery log (issue 26): what each attempt did and why, when a failing delivery is tried
// next (as the dispatcher stored it), one attempt in full, and each webhook's health over a day and
// a week. Reads only; nothing here is audited.

const DEFAULT_RETENTION_MS = 30 * 86_400_000;
/** D7's User-Agent of every delivery. */
const WEBHOOK_USER_AGENT = 'TripService-Webhooks/1';
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * What comes after a failed attempt that has not been followed by another yet: the next one and
 * when it is due, or why there is none ("no more attempts: …").
 */
export type NextAttempt = { number: number; due_at: Date } | { none: string };

export type LogEntry = ListedAttempt & {
  /** What happened, in words (attempt-words.ts). */
  reason: string;
  /** For the latest failed attempt of a delivery: the next one, or why there is none. */
  next: NextAttempt | null;
};

export interface LogPage {
  webhook: WebhookView;
  attempts: LogEntry[];
  /** Pass as `before` for the page after this one; null on the last page. */
  next_before: number | null;
  /** Why the latest failed attempt failed, in words; null if none failed. */
  last_failure_reason: string | null;
}

export interface HealthBucket {
  start: Date;
  attempts: number;
  failures: number;
}

export interface WebhookHealth {
  hours: HealthBucket[];
  days: HealthBucket[];
  /** Successful attempts out of all in the last 24 hours, 0–1; null without attempts. */
  success_rate_24h: number | null;
}

const rate = (c: { attempts: number; failures: number }) =>
  c.attempts === 0 ? null : (c.attempts - c.failures) / c.attempts;

/** `count` periods of `unitMs` ending with the current one (UTC), with the histogram's counts. */
function buckets(
  rows: { period: Date; attempts: number; failures: number }[],
  start: number,
  count: number,
  unitMs: number,
): HealthBucket[] {
  const byStart = new Map(rows.map((r) => [r.period.getTime(), r]));
  return Array.from({ length: count }, (_, i) => {
    const at = start + i * unitMs;
    const row = byStart.get(at);
    return { start: new Date(at), attempts: row?.attempts ?? 0, failures: row?.failures ?? 0 };
  });
}

/**
 * The next attempt after a failed one, when the dispatcher scheduled it (`next_attempt_at`, stored
 * with the attempt): read, never worked out again here, so it is right however the dispatcher's
 * retry schedule is set. Switching a webhook off drops its pending attempts, whatever was due.
 */
function nextAfter(a: ListedAttempt, webhook: WebhookView): NextAttempt | null {
  if (a.succeeded || a.followed) return null;
  if (webhook.disabled_at) return { none: 'the webhook is switched off' };
  if (a.next_attempt_at) return { number: a.attempt + 1, due_at: a.next_attempt_at };
  return { none: 'the retry window has passed' };
}

export function deliveryLogActions({ db, options }: SettingsContext) {
  const retentionMs = options.eventRetentionMs ?? DEFAULT_RETENTION_MS;

  /** The body an attempt sent: kept for a test event, rebuilt from its record for the others. */
  const bodySent = async (a: WebhookAttemptRow, agencyId: string): Promise<string | null> => {
    if (a.request_body !== null || isTestEventId(a.event_id)) return a.request_body;
    const event = await findRecordedEvent(db, {
      agencyId,
      id: a.event_id,
      notAfter: a.attempted_at,
      retentionMs,
    });
    return event ? JSON.stringify(eventRecord(event as EventSource)) : null;
  };

  return {
    /**
     * A page of the webhook's delivery log, newest first (at most `limit`, 1–1000): all attempts
     * or the failed ones, from before the attempt `before`.
     */
    async listAttempts(
      actor: Actor,
      id: string,
      input: { limit?: number; failedOnly?: boolean; before?: number } = {},
    ): Promise<LogPage> {
      const limit = input.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalid('a limit is from 1 to 1000.');
      if (input.before !== undefined && !(Number.isSafeInteger(input.before) && input.before > 0)) {
        throw invalid('before is the number of an attempt.');
      }
      const { webhook: row } = await findWebhook(db, actor, id);
      const [webhook, rows, [lastFailure]] = await Promise.all([
        viewOf(db, row),
        listWebhookAttempts(db, id, { ...input, limit: limit + 1 }),
        listWebhookAttempts(db, id, { failedOnly: true, limit: 1 }),
      ]);
      const page = rows.slice(0, limit);
      return {
        last_failure_reason: lastFailure ? describeAttempt(lastFailure) : null,
        webhook,
        attempts: page.map((a) => ({ ...a, reason: describeAttempt(a), next: nextAfter(a, webhook) })),
        next_before: rows.length > limit ? page[page.length - 1]!.id : null,
      };
    },

    /** One attempt in full: the request as sent (headers, signature, body; never a secret) and the answer. */
    async getAttempt(actor: Actor, webhookId: string, attemptId: number) {
      const { webhook } = await findWebhook(db, actor, webhookId);
      const a = Number.isSafeInteger(attemptId)
        ? await findWebhookAttempt(db, webhookId, attemptId)
        : undefined;
      if (!a) throw notFound(`no attempt ${attemptId} of webhook ${webhookId}.`);
      return {
        webhook: await viewOf(db, webhook),
        attempt: { ...a, reason: describeAttempt(a) },
        request: {
          url: webhook.url,
          headers: [
            ['Content-Type', 'application/json'],
            ['User-Agent', WEBHOOK_USER_AGENT],
            ['Service-Event-Id', a.event_id],
            ['Service-Event-Type', a.event_type],
            ['Service-Signature', a.request_signature ?? '(not kept for attempts made before it was)'],
          ] as [string, string][],
          body: await bodySent(a, webhook.agency_id),
        },
        response: {
          status: a.status_code,
          headers: a.response_headers,
          body: a.response_body,
          duration_ms: a.duration_ms,
        },
      };
    },

    /** Attempts and failures per hour over the last 24 hours and per day over the last 7 (UTC). */
    async webhookHealth(actor: Actor, id: string, now = new Date()): Promise<WebhookHealth> {
      await findWebhook(db, actor, id);
      const hourStart = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
      const dayStart = Math.floor(now.getTime() / DAY_MS) * DAY_MS - 6 * DAY_MS;
      const [hourly, daily] = await Promise.all([
        attemptHistogram(db, id, 'hour', new Date(hourStart)),
        attemptHistogram(db, id, 'day', new Date(dayStart)),
      ]);
      const hours = buckets(hourly, hourStart, 24, HOUR_MS);
      const total = hours.reduce(
        (sum, b) => ({ attempts: sum.attempts + b.attempts, failures: sum.failures + b.failures }),
        { attempts: 0, failures: 0 },
      );
      return { hours, days: buckets(daily, dayStart, 7, DAY_MS), success_rate_24h: rate(total) };
    },

    /** Each of the agency's webhooks' success rate over the last 24 hours (null: no attempts). */
    async successRates(
      actor: Actor,
      agencyId: string,
      now = new Date(),
    ): Promise<Map<string, number | null>> {
      await authorize(db, actor, agencyId);
      const ids = (await listWebhooks(db, agencyId)).map((w) => w.id);
      const counts = await attemptCountsSince(db, ids, new Date(now.getTime() - DAY_MS));
      return new Map(ids.map((id) => [id, rate(counts.get(id) ?? { attempts: 0, failures: 0 })]));
    },
  };
}
