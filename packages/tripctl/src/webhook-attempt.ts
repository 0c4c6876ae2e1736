import { InvalidArgumentError, type Command } from 'commander';
import { formatTime } from '@trips/contracts';
import { PLATFORM, type Settings } from '@trips/settings';
import { webhookId } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { usageError } from './errors.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { printResult } from './output.ts';
import { parseAttemptNumber } from './webhook-attempts.ts';

// One attempt of the delivery log, as the settings page shows it at
// /settings/webhooks/<id>/attempts/<n>, and its "send this event again" button.

type AttemptDetail = Awaited<ReturnType<Settings['getAttempt']>>;

/** An event id as the log shows it; test events (evt_test_…) too, so they get the module's reason. */
function parseEventId(value: string): string {
  const id = value.trim();
  if (!/^evt_[0-9A-Za-z_-]{1,100}$/.test(id))
    throw new InvalidArgumentError(`'${value}' is not an event id (evt_…).`);
  return id;
}

/** The attempt's number, given once: as the second argument or as --attempt (exit 2 otherwise). */
function settleAttempt(positional: number | undefined, option: number | undefined, id: string): number {
  if (positional !== undefined && option !== undefined && positional !== option) {
    throw usageError(`two attempts, ${positional} and --attempt ${option}: give one.`);
  }
  const n = positional ?? option;
  if (n === undefined) {
    throw usageError(
      `which attempt? Give its number, as 'tripctl webhook attempts ${id}' shows it (#n): tripctl webhook attempt ${id} <n>.`,
    );
  }
  return n;
}

function detailJson({ webhook, attempt: a, request, response }: AttemptDetail) {
  return {
    webhook_id: webhook.id,
    id: a.id,
    event_id: a.event_id,
    event_type: a.event_type,
    attempt: a.attempt,
    attempted_at: a.attempted_at,
    succeeded: a.succeeded,
    error: a.error,
    reason: a.reason,
    request: {
      method: 'POST',
      url: request.url,
      headers: Object.fromEntries(request.headers),
      body: request.body,
    },
    response,
  };
}

/** The page's sections, as text: what happened, the request sent, the answer. */
function detailLines({ webhook, attempt: a, request, response }: AttemptDetail): string[] {
  const indent = (text: string) => text.split('\n').map((line) => `    ${line}`);
  const on = webhook.state === 'active' || webhook.state === 'failing';
  return [
    `Attempt #${a.id} of webhook ${webhook.id}: attempt ${a.attempt} of ${a.event_id} (${a.event_type})`,
    `  ${a.succeeded ? 'delivered' : 'failed'}: ${a.succeeded ? `answered ${a.status_code}` : a.reason}`,
    `  at ${formatTime(a.attempted_at)}, took ${response.duration_ms} ms`,
    'Request sent:',
    `  POST ${request.url}`,
    ...request.headers.map(([name, value]) => `  ${name}: ${value}`),
    '  (the signing secret is never shown: check the signature with the secret you keep)',
    '  Body:',
    ...(request.body === null
      ? ['    no longer kept: the event has left the event record']
      : indent(request.body)),
    'Answer:',
    ...(response.status === null
      ? [`  none: ${a.reason}`]
      : [
          `  status ${response.status}`,
          '  Headers:',
          ...indent(response.headers ?? '(not kept for attempts made before they were)'),
          '  Body (the first KiB):',
          ...indent(response.body || '(empty)'),
        ]),
    ...(on ? [`Send this event again: tripctl webhook resend ${webhook.id} --attempt ${a.id}`] : []),
  ];
}

/** `webhook attempt`: one attempt in full, as the settings page shows it. */
export function addAttemptCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('attempt')
    .description('one delivery attempt in full: the request as sent (never the secret) and the answer')
    .usage('<id> <attempt> [--json]   (or --id <id> --attempt <n>)')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .argument(
      '[attempt]',
      "the attempt's number (#n in 'webhook attempts'); or give it with --attempt",
      parseAttemptNumber,
    )
    .addOption(objectIdOption(webhookId()))
    .option('--attempt <n>', 'the same number, as an option', parseAttemptNumber)
    .option(...JSON_OPTION)
    .action(
      async (
        _id: unknown,
        positional: number | undefined,
        opts: { id: string; attempt?: number; json?: boolean },
      ) => {
        const n = settleAttempt(positional, opts.attempt, opts.id);
        const detail = await ctx.settings().getAttempt(PLATFORM, opts.id, n);
        printResult(ctx.io, opts.json, detailJson(detail), detailLines(detail));
      },
    );
}

/**
 * `webhook resend`: "send this event again". By the attempt's number, as the page's button does
 * (the attempt names the event), or by the event's id; either way through the module's resendEvent,
 * audited as webhook.redelivered with {event_id, events: 1}.
 */
export function addResendCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('resend')
    .description('send one event again to one webhook, as a new delivery (attempt 1)')
    .usage('<id> (--attempt <n> | --event <evt_…>) [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option('--attempt <n>', "the event of this attempt (#n in 'webhook attempts')", parseAttemptNumber)
    .option('--event <id>', 'this event of the record (evt_…)', parseEventId)
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; attempt?: number; event?: string; json?: boolean }) => {
      if ((opts.attempt === undefined) === (opts.event === undefined)) {
        throw usageError('which event? Give one of --attempt <n> and --event <evt_…>.');
      }
      const settings = ctx.settings();
      const eventId =
        opts.event ?? (await settings.getAttempt(PLATFORM, opts.id, opts.attempt!)).attempt.event_id;
      const sent = await settings.resendEvent(PLATFORM, opts.id, eventId);
      printResult(ctx.io, opts.json, sent, [
        `Queued event ${sent.event.id} (${sent.event.type}) again for webhook ${sent.webhook_id}, as a new delivery; see 'tripctl webhook attempts ${sent.webhook_id}'.`,
      ]);
    });
}
