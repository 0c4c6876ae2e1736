import { InvalidArgumentError, type Command } from 'commander';
import { formatTime } from '@trips/contracts';
import { PLATFORM, type LogEntry } from '@trips/settings';
import { webhookId } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { printResult } from './output.ts';

// `tripctl webhook attempts`: the delivery log as the settings page shows it, in the same words.

const MAX_ATTEMPTS_LIMIT = 1000;

/** An attempt's number as the log shows it (`#12` or `12`). */
export function parseAttemptNumber(value: string): number {
  const n = /^#?[1-9]\d{0,14}$/.test(value.trim()) ? Number(value.trim().replace('#', '')) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`'${value}' is not an attempt number.`);
  return n;
}

function parseLimit(value: string): number {
  const limit = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ATTEMPTS_LIMIT) {
    throw new InvalidArgumentError(`'${value}' is not a whole number from 1 to ${MAX_ATTEMPTS_LIMIT}.`);
  }
  return limit;
}

function attemptJson(a: LogEntry) {
  return {
    id: a.id,
    attempted_at: a.attempted_at,
    event_id: a.event_id,
    event_type: a.event_type,
    attempt: a.attempt,
    succeeded: a.succeeded,
    status_code: a.status_code,
    error: a.error,
    reason: a.reason,
    next_attempt: a.next,
    duration_ms: a.duration_ms,
    response_body: a.response_body,
  };
}

/** One attempt on two lines: what, and what happened in words (as the settings page says it). */
function attemptLines(a: LogEntry): string[] {
  const next = !a.next
    ? []
    : 'none' in a.next
      ? [`  no more attempts: ${a.next.none}`]
      : [`  next attempt: ${a.next.number}, due ${formatTime(a.next.due_at)}`];
  return [
    `${formatTime(a.attempted_at)}  ${a.event_id}  ${a.event_type}  attempt ${a.attempt}  ${a.duration_ms} ms  (#${a.id})`,
    `  ${a.succeeded ? 'delivered' : 'failed'}: ${a.succeeded ? `answered ${a.status_code}` : a.reason}`,
    ...next,
  ];
}

/** `webhook attempts`: a webhook's delivery log, newest first, a page at a time. */
export function addAttemptsCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('attempts')
    .description("a webhook's delivery attempts, newest first, each with why it failed")
    .usage('<id> [--limit <n>] [--failed] [--before <attempt>] [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option('--limit <n>', `how many, from 1 to ${MAX_ATTEMPTS_LIMIT}`, parseLimit, 50)
    .option('--failed', 'failed attempts only')
    .option(
      '--before <attempt>',
      'the page before this attempt (#n, as the last page ended)',
      parseAttemptNumber,
    )
    .option(...JSON_OPTION)
    .action(
      async (
        _id: unknown,
        opts: { id: string; limit: number; failed?: boolean; before?: number; json?: boolean },
      ) => {
        const page = await ctx.settings().listAttempts(PLATFORM, opts.id, {
          limit: opts.limit,
          failedOnly: opts.failed === true,
          ...(opts.before !== undefined && { before: opts.before }),
        });
        const { webhook: found, attempts } = page;
        const which = opts.failed ? 'failed delivery attempt' : 'delivery attempt';
        const human =
          attempts.length === 0
            ? [`No ${which}s recorded for webhook ${found.id} (${found.url}).`]
            : [
                `${attempts.length} ${which}${attempts.length > 1 ? 's' : ''} of webhook ${found.id} (${found.url}), newest first:`,
                ...attempts.flatMap(attemptLines),
                ...(page.next_before
                  ? [
                      `Older: tripctl webhook attempts --id ${found.id}${opts.failed ? ' --failed' : ''} --before ${page.next_before}`,
                    ]
                  : []),
              ];
        printResult(
          ctx.io,
          opts.json,
          {
            webhook_id: found.id,
            state: found.state,
            attempts: attempts.map(attemptJson),
            next_before: page.next_before,
          },
          human,
        );
      },
    );
}
