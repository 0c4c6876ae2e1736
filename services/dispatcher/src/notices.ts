import { formatTime, PRODUCT_NAME } from '@trips/contracts';
import { describeDuration, formatDuration } from '@trips/runtime';
import type { WebhookAttemptRow, WebhookRow } from '@trips/db';
import type { NewOwnerNotice } from '@trips/db/owner-notices';
import { describeAttempt } from '@trips/settings/attempt-words';

export interface NoticeContext {
  /** Where owners manage webhooks. */
  settingsUrl: string;
  failureWindowMs: number;
  /** EVENT_RETENTION: how long GET /events keeps what the webhook missed. */
  eventRetentionMs: number;
}

/**
 * The last error as the settings page says it (docs/wording.md: the same words wherever people
 * read them): the webhook's latest failed attempt in the delivery log's words. The webhook row
 * keeps only the failure class, an internal name, which is said only if that attempt is no longer kept.
 */
export function lastErrorWords(webhook: WebhookRow, latestFailure: WebhookAttemptRow | undefined): string {
  return latestFailure ? describeAttempt(latestFailure) : (webhook.last_error ?? 'unknown');
}

/**
 * The e-mails owners get about a failing webhook. Plain text, written for an agency owner who may
 * not be a developer: which webhook, since when, the last error (lastErrorWords), and what to do.
 * Never a secret.
 */
export function switchedOffNotice(
  webhook: WebhookRow,
  recipient: string,
  ctx: NoticeContext,
  lastError: string,
): NewOwnerNotice {
  return {
    agencyId: webhook.agency_id,
    webhookId: webhook.id,
    kind: 'webhook_switched_off',
    recipient,
    subject: `Webhook switched off: ${webhook.url}`,
    body: [
      `Your webhook ${webhook.id} (${webhook.url}) has been switched off.`,
      '',
      `It has not answered any delivery with a 2xx status since ${iso(webhook.failing_since)},`,
      `which is longer than ${formatDuration(ctx.failureWindowMs)}. We stopped sending it events at ${iso(webhook.disabled_at)}.`,
      `Last error: ${lastError}.`,
      '',
      `Nothing is lost: GET /api/v1/events keeps every event for ${describeDuration(ctx.eventRetentionMs)}, so your system can`,
      'catch up from its last stored cursor once the endpoint works again.',
      '',
      'To switch it back on, fix the endpoint, then:',
      `  - in API settings (${ctx.settingsUrl}), open the webhook and choose "Switch back on", or`,
      `  - ask the platform team to run: tripctl webhook enable --id ${webhook.id}`,
      'Switching it on starts a fresh failure count; events recorded while it was off are not sent',
      'automatically (an owner can ask to redeliver events since a time).',
      '',
      // The usual signature separator, then who writes (docs/wording.md).
      '-- ',
      PRODUCT_NAME,
    ].join('\n'),
  };
}

export function failingNotice(
  webhook: WebhookRow,
  recipient: string,
  ctx: NoticeContext,
  lastError: string,
): NewOwnerNotice {
  return {
    agencyId: webhook.agency_id,
    webhookId: webhook.id,
    kind: 'webhook_failing',
    recipient,
    subject: `Webhook failing: ${webhook.url}`,
    body: [
      `Your webhook ${webhook.id} (${webhook.url}) has not answered any delivery with a 2xx status`,
      `since ${iso(webhook.failing_since)}. Last error: ${lastError}.`,
      '',
      'We keep retrying each delivery. If the endpoint has still answered no delivery with a 2xx',
      `by ${iso(switchOffAt(webhook, ctx))} (${formatDuration(ctx.failureWindowMs)} after it started failing), we switch the webhook off`,
      'and tell you again. One 2xx answer before then is enough to keep it on.',
      `You can see each attempt, and why it failed, in API settings (${ctx.settingsUrl}).`,
      '',
      // The usual signature separator, then who writes (docs/wording.md).
      '-- ',
      PRODUCT_NAME,
    ].join('\n'),
  };
}

/** When a failing webhook is switched off unless a 2xx comes first: its streak's start plus the window. */
function switchOffAt(webhook: WebhookRow, ctx: NoticeContext): Date | null {
  if (!webhook.failing_since) return null;
  return new Date(new Date(webhook.failing_since).getTime() + ctx.failureWindowMs);
}

/** A time as people read it everywhere (docs/wording.md). */
function iso(value: Date | string | null): string {
  return value ? formatTime(value) : 'unknown';
}
