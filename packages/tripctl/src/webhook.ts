import { InvalidArgumentError, type Command } from 'commander';
import { EVENT_TYPE_NAMES, isEventType } from '@trips/contracts';
import {
  createWebhook,
  findWebhook,
  listWebhookAttempts,
  listWebhooks,
  setWebhookEnabled,
  webhookState,
  type WebhookAttemptRow,
  type WebhookRow,
} from '@trips/db';
import { parseDuration } from '@trips/runtime';
import { PLATFORM, webhookView } from '@trips/settings';
import { requireAgency } from './agency.ts';
import { progressReporter } from './progress.ts';
import { idOf } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { failure, usageError } from './errors.ts';
import { printResult } from './output.ts';

// Webhooks from the platform team's side (issue 4, item 8; decisions.md D7), so one can be set up
// before the owners' settings page exists, and an owner's switched-off webhook switched back on.

/** The webhooks table refuses longer URLs (migration 0005); refuse them here first, naming the length. */
export const MAX_URL_LENGTH = 2048;
const MAX_DESCRIPTION_LENGTH = 500;
const MAX_ATTEMPTS_LIMIT = 1000;

/**
 * https only (D7), no credentials (they would be sent to whoever answers, and shown in every list),
 * at most 2048 characters. Answers the URL as WHATWG parses it, which is what the dispatcher will
 * call, so the scheme and host are lower case as the table's check expects.
 */
export function parseWebhookUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new InvalidArgumentError(`'${value}' is not a URL.`);
  }
  if (url.username !== '' || url.password !== '') {
    // First, and not an InvalidArgumentError: commander would quote the value, password included.
    throw usageError(
      "option '--url <url>': a webhook URL must not carry credentials (user:password@); " +
        'the signature authenticates deliveries.',
    );
  }
  if (url.protocol !== 'https:') {
    throw new InvalidArgumentError(`'${value}' is not an https URL; webhooks are delivered over https only.`);
  }
  if (url.href.length > MAX_URL_LENGTH) {
    throw new InvalidArgumentError(
      `a webhook URL has at most ${MAX_URL_LENGTH} characters; this one has ${url.href.length}.`,
    );
  }
  return url.href;
}

/** Comma-separated event types from the catalogue, or `all` for every one of them. */
export function parseEventTypes(value: string): string[] {
  if (value.trim() === 'all') return [...EVENT_TYPE_NAMES];
  const types = [...new Set(value.split(',').map((s) => s.trim()))].filter((s) => s !== '');
  if (types.length === 0) {
    throw new InvalidArgumentError(`give at least one of ${EVENT_TYPE_NAMES.join(', ')}, or all.`);
  }
  const unknown = types.filter((s) => !isEventType(s));
  if (unknown.length > 0) {
    const list = unknown.map((s) => `'${s}'`).join(', ');
    throw new InvalidArgumentError(
      `unknown event type${unknown.length > 1 ? 's' : ''} ${list}; known event types: ${EVENT_TYPE_NAMES.join(', ')}.`,
    );
  }
  return types;
}

export function parseDescription(value: string): string {
  const description = value.trim();
  if (description.length < 1 || description.length > MAX_DESCRIPTION_LENGTH) {
    throw new InvalidArgumentError(`a description has 1 to ${MAX_DESCRIPTION_LENGTH} characters.`);
  }
  return description;
}

export function parseLimit(value: string): number {
  const limit = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ATTEMPTS_LIMIT) {
    throw new InvalidArgumentError(`'${value}' is not a whole number from 1 to ${MAX_ATTEMPTS_LIMIT}.`);
  }
  return limit;
}

const time = (d: Date | null, none: string) => (d ? d.toISOString() : none);

function webhookLines(w: WebhookRow): string[] {
  const state = webhookState(w);
  const health = [`last success ${time(w.last_success_at, 'never')}`];
  if (w.failing_since) health.unshift(`failing since ${time(w.failing_since, '')}`);
  if (w.disabled_at) {
    health.unshift(`${state === 'switched_off' ? 'switched off' : 'disabled'} at ${time(w.disabled_at, '')}`);
  }
  health.push(`last error ${w.last_error ?? 'none'}`);
  return [
    `${w.id}  ${state}  ${w.url}`,
    `  events: ${w.event_types.join(', ')}`,
    ...(w.description ? [`  description: ${w.description}`] : []),
    `  ${health.join(', ')}`,
  ];
}

function attemptJson(a: WebhookAttemptRow) {
  return {
    attempted_at: a.attempted_at,
    event_id: a.event_id,
    event_type: a.event_type,
    attempt: a.attempt,
    succeeded: a.succeeded,
    status_code: a.status_code,
    error: a.error,
    duration_ms: a.duration_ms,
    response_body: a.response_body,
  };
}

function attemptLine(a: WebhookAttemptRow): string {
  const outcome = [a.error, a.status_code === null ? null : String(a.status_code)]
    .filter((s) => s !== null)
    .join(' ');
  return `${a.attempted_at.toISOString()}  ${a.event_id}  ${a.event_type}  #${a.attempt}  ${outcome}  ${a.duration_ms} ms`;
}

async function requireWebhook(ctx: Context, id: string): Promise<WebhookRow> {
  const webhook = await findWebhook(ctx.db(), id);
  if (!webhook) throw failure(`no webhook ${id}.`);
  return webhook;
}

const webhookId = () => idOf('whk', 'a webhook');

export function registerWebhook(program: Command, ctx: Context): void {
  const webhook = program
    .command('webhook')
    .description('register webhooks, see their state and deliveries, switch them off and on');

  webhook
    .command('create')
    .description('register an https webhook; its signing secret is printed once')
    .usage('--agency <id> --url <url> --events <list> [--description <text>] [--json]')
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .requiredOption(
      '--url <url>',
      `where to deliver: https, no credentials, at most ${MAX_URL_LENGTH} characters`,
      parseWebhookUrl,
    )
    .requiredOption(
      '--events <list>',
      `comma-separated event types, or all for every one: ${EVENT_TYPE_NAMES.join(', ')}`,
      parseEventTypes,
    )
    .option(
      '--description <text>',
      `a note for the owners (at most ${MAX_DESCRIPTION_LENGTH} characters)`,
      parseDescription,
    )
    .option(...JSON_OPTION)
    .action(
      async (opts: {
        agency: string;
        url: string;
        events: string[];
        description?: string;
        json?: boolean;
      }) => {
        const agency = await requireAgency(ctx, opts.agency);
        const { webhook: created, secret } = await createWebhook(ctx.db(), {
          agencyId: agency.id,
          url: opts.url,
          eventTypes: opts.events,
          description: opts.description ?? null,
        });
        printResult(ctx.io, opts.json, { ...webhookView(created), secret }, [
          `Created webhook ${created.id} for agency ${agency.id} "${agency.name}", state ${webhookState(created)}:`,
          `  url: ${created.url}`,
          `  events: ${created.event_types.join(', ')}`,
          'Its signing secret will not be shown again; store it now:',
          secret,
        ]);
      },
    );

  webhook
    .command('list')
    .description("list an agency's webhooks with their state (never their secrets)")
    .usage('--agency <id> [--json]')
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .option(...JSON_OPTION)
    .action(async (opts: { agency: string; json?: boolean }) => {
      const agency = await requireAgency(ctx, opts.agency);
      const webhooks = await listWebhooks(ctx.db(), agency.id);
      const human =
        webhooks.length === 0
          ? [`Agency ${agency.id} "${agency.name}" has no webhooks.`]
          : [
              `Agency ${agency.id} "${agency.name}" has ${webhooks.length} webhook${webhooks.length > 1 ? 's' : ''}:`,
              ...webhooks.flatMap(webhookLines),
            ];
      printResult(ctx.io, opts.json, { agency_id: agency.id, webhooks: webhooks.map(webhookView) }, human);
    });

  webhook
    .command('disable')
    .description('switch a webhook off: nothing more is delivered and pending retries are dropped')
    .usage('--id <id> [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; json?: boolean }) => {
      const updated = await setWebhookEnabled(ctx.db(), opts.id, false);
      if (!updated) throw failure(`no webhook ${opts.id}.`);
      printResult(ctx.io, opts.json, webhookView(updated), [
        `Webhook ${updated.id} is ${webhookState(updated).replace('_', ' ')}: nothing more is delivered to ${updated.url}.`,
        `Switch it back on with 'tripctl webhook enable --id ${updated.id}'.`,
      ]);
    });

  webhook
    .command('enable')
    .description('switch a webhook back on with a fresh failure streak (also after a switch-off)')
    .usage('--id <id> [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; json?: boolean }) => {
      const updated = await setWebhookEnabled(ctx.db(), opts.id, true);
      if (!updated) throw failure(`no webhook ${opts.id}.`);
      printResult(ctx.io, opts.json, webhookView(updated), [
        `Webhook ${updated.id} is ${webhookState(updated)}: new events are delivered to ${updated.url}.`,
        'Events recorded while it was off are not redelivered; read them with GET /events.',
      ]);
    });

  webhook
    .command('attempts')
    .description("a webhook's recent delivery attempts, newest first")
    .usage('--id <id> [--limit <n>] [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option('--limit <n>', `how many, from 1 to ${MAX_ATTEMPTS_LIMIT}`, parseLimit, 50)
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; limit: number; json?: boolean }) => {
      const found = await requireWebhook(ctx, opts.id);
      const attempts = await listWebhookAttempts(ctx.db(), found.id, opts.limit);
      const human =
        attempts.length === 0
          ? [`No delivery attempts recorded for webhook ${found.id} (${found.url}).`]
          : [
              `The ${attempts.length} most recent delivery attempt${attempts.length > 1 ? 's' : ''} of webhook ${found.id} (${found.url}), newest first:`,
              ...attempts.map(attemptLine),
            ];
      printResult(
        ctx.io,
        opts.json,
        { webhook_id: found.id, state: webhookState(found), attempts: attempts.map(attemptJson) },
        human,
      );
    });

  // ---- Through the owners' settings module: checked, validated and audited as 'platform' ----

  webhook
    .command('update')
    .description("change a webhook's URL, event types or description")
    .usage('--id <id> [--url <url>] [--events <list>] [--description <text>] [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option('--url <url>', 'the new https URL', parseWebhookUrl)
    .option('--events <list>', 'the new comma-separated event types, or all', parseEventTypes)
    .option('--description <text>', 'a new note for the owners', parseDescription)
    .option(...JSON_OPTION)
    .action(
      async (opts: { id: string; url?: string; events?: string[]; description?: string; json?: boolean }) => {
        if (opts.url === undefined && opts.events === undefined && opts.description === undefined) {
          throw usageError('nothing to change: give --url, --events or --description.');
        }
        const updated = await ctx.settings().updateWebhook(PLATFORM, opts.id, {
          url: opts.url,
          eventTypes: opts.events,
          description: opts.description,
        });
        printResult(ctx.io, opts.json, updated, [
          `Updated webhook ${updated.id}, state ${updated.state}:`,
          `  url: ${updated.url}`,
          `  events: ${updated.events.join(', ')}`,
        ]);
      },
    );

  webhook
    .command('rotate-secret')
    .description('a new signing secret, printed once; the old one keeps signing for the overlap')
    .usage('--id <id> [--overlap <duration>] [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option(
      '--overlap <duration>',
      'how long the old secret keeps signing, e.g. 24h, 30m, 0s (at most 7d)',
      parseOverlap,
      24 * 3600_000,
    )
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; overlap: number; json?: boolean }) => {
      const rotated = await ctx.settings().rotateSecret(PLATFORM, opts.id, { overlapMs: opts.overlap });
      printResult(ctx.io, opts.json, rotated, [
        `Rotated the secret of webhook ${rotated.webhook_id}; the previous secret signs until ${rotated.previous_secrets_expire_at.toISOString()}.`,
        'The new signing secret will not be shown again; store it now:',
        rotated.secret,
      ]);
    });

  webhook
    .command('test')
    .description('queue a test delivery (an evt_test_… event about a placeholder object) to one webhook')
    .usage('--id <id> [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; json?: boolean }) => {
      const sent = await ctx.settings().sendTestEvent(PLATFORM, opts.id);
      printResult(ctx.io, opts.json, sent, [
        `Queued test event ${sent.event.id} (${sent.event.type}) for webhook ${sent.webhook_id}; see 'tripctl webhook attempts --id ${sent.webhook_id}'.`,
      ]);
    });

  webhook
    .command('redeliver')
    .description(
      "queue again the agency's events of the webhook's types since a time (within EVENT_RETENTION)",
    )
    .usage('--id <id> --since <time> [--json]')
    .requiredOption('--id <id>', 'the webhook id (whk_…)', webhookId())
    .requiredOption('--since <time>', 'an ISO 8601 time, or a duration ago such as 6h or 2d', parseSince)
    .option(...JSON_OPTION)
    .action(async (opts: { id: string; since: Date; json?: boolean }) => {
      const progress = progressReporter(ctx.io.stderr, 'redelivered');
      const result = await ctx
        .settings()
        .redeliver(PLATFORM, opts.id, { since: opts.since, onProgress: progress.update })
        .finally(progress.end);
      printResult(ctx.io, opts.json, result, [
        `Queued ${result.events} event${result.events === 1 ? '' : 's'} since ${result.since.toISOString()} for webhook ${result.webhook_id}.`,
      ]);
    });
}

export function parseOverlap(value: string): number {
  try {
    return parseDuration(value.trim());
  } catch {
    throw new InvalidArgumentError(`'${value}' is not a duration such as 24h, 30m or 0s.`);
  }
}

/** An ISO 8601 time, or a duration before now. */
export function parseSince(value: string): Date {
  const text = value.trim();
  if (/^\d+(ms|s|m|h|d)$/.test(text)) return new Date(Date.now() - parseOverlap(text));
  const time = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(time.getTime())) {
    throw new InvalidArgumentError(`'${value}' is not an ISO 8601 time or a duration such as 6h.`);
  }
  return time;
}
