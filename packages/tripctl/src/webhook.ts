import { InvalidArgumentError, type Command } from 'commander';
import { EVENT_TYPE_NAMES, formatTime } from '@trips/contracts';
import { isCalendarTime } from '@trips/runtime';
import {
  checkDescription,
  checkEventTypes,
  checkWebhookUrl,
  describeRateLimit,
  MAX_DESCRIPTION_LENGTH,
  MAX_RATE_LIMIT,
  MAX_URL_LENGTH,
  parseRateLimit,
  PLATFORM,
  SettingsError,
  type PublicKeyView,
  type WebhookView,
} from '@trips/settings';
import { requireAgency } from './agency.ts';
import { progressReporter } from './progress.ts';
import { addAttemptsCommand } from './webhook-attempts.ts';
import { addAttemptCommand, addResendCommand } from './webhook-attempt.ts';
import { addSigningCommands } from './webhook-signing.ts';
import { fromCheck, idOf, parseOverlap, webhookId } from './args.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { usageError } from './errors.ts';
import { printResult } from './output.ts';

// Webhooks from the platform team's side (decisions.md D7): every command goes through the owners'
// settings module, so it is checked, validated and audited (as 'platform') like the settings page.

/**
 * The settings module's URL check, but for private addresses, which the module refuses later
 * unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set. Answers the URL as WHATWG parses it, which is what
 * the dispatcher will call. A usage error that never repeats the URL: it may carry a password.
 */
function parseWebhookUrl(value: string): string {
  try {
    return checkWebhookUrl(value, { allowPrivateNetworks: true });
  } catch (error) {
    if (error instanceof SettingsError) throw usageError(`option '--url <url>': ${error.message}`);
    throw error;
  }
}

/** Comma-separated event types from the catalogue, or `all` for every one of them. */
const parseEventTypes = fromCheck((value) =>
  value.trim() === 'all' ? [...EVENT_TYPE_NAMES] : checkEventTypes(value.split(',')),
);

const parseDescription = fromCheck((value) => checkDescription(value)!);

/**
 * The owner's rate limit: deliveries a second, or `off` for none. Parsed to 'off' rather than null,
 * which commander would store as ''; rateLimitOf makes it the module's null.
 */
const RATE_LIMIT_OPTION = [
  '--rate-limit <n|off>',
  `at most n deliveries a second (1 to ${MAX_RATE_LIMIT}), by all dispatchers together; off for none`,
  fromCheck((value) => parseRateLimit(value) ?? 'off'),
] as const;
type RateLimitOption = number | 'off' | undefined;
const rateLimitOf = (option: RateLimitOption) => (option === 'off' ? null : option);

const time = (d: Date | null, none: string) => (d ? formatTime(d) : none);

/** The secret again as the Standard Webhooks libraries take it (D11; docs/webhooks.md, "Secrets"). */
const standardFormLines = (standard: string) => [
  'The same secret in the form Standard Webhooks libraries take (standard base64):',
  standard,
];

function webhookLines(w: WebhookView & { ed25519_public_keys: PublicKeyView[] }): string[] {
  const health = [`last success ${time(w.last_success_at, 'never')}`];
  if (w.failing_since) health.unshift(`failing since ${time(w.failing_since, '')}`);
  if (w.disabled_at) {
    health.unshift(
      `${w.state === 'switched_off' ? 'switched off' : 'disabled'} at ${time(w.disabled_at, '')}`,
    );
  }
  health.push(`last error ${w.last_error ?? 'none'}`);
  return [
    `${w.id}  ${w.state}  ${w.url}`,
    `  events: ${w.events.join(', ')}`,
    ...(w.description ? [`  description: ${w.description}`] : []),
    `  rate limit: ${describeRateLimit(w.rate_limit)}`,
    ...(w.paused ? [`  paused until ${formatTime(w.paused.until)}: ${w.paused.reason}`] : []),
    `  ${health.join(', ')}`,
    ...w.ed25519_public_keys.map((k) => `  ed25519 public key: ${k.public_key}`),
  ];
}

export function registerWebhook(program: Command, ctx: Context): void {
  const webhook = program
    .command('webhook')
    .description('register webhooks, see their state and deliveries, switch them off and on');

  addCreateCommand(webhook, ctx);
  addListCommand(webhook, ctx);
  addDisableCommand(webhook, ctx);
  addEnableCommand(webhook, ctx);
  addAttemptsCommand(webhook, ctx);
  addAttemptCommand(webhook, ctx);
  addUpdateCommand(webhook, ctx);
  addRotateSecretCommand(webhook, ctx);
  addTestCommand(webhook, ctx);
  addRedeliverCommand(webhook, ctx);
  addResendCommand(webhook, ctx);
  addSigningCommands(webhook, ctx);
}

/** `webhook create`: registers a webhook and prints its signing secret, once. */
function addCreateCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('create')
    .description('register an https webhook; its signing secret is printed once')
    .usage('--agency <id> --url <url> --events <list> [--description <text>] [--rate-limit <n|off>] [--json]')
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
    .option(...RATE_LIMIT_OPTION)
    .option(...JSON_OPTION)
    .action(
      async (opts: {
        agency: string;
        url: string;
        events: string[];
        description?: string;
        rateLimit?: RateLimitOption;
        json?: boolean;
      }) => {
        const agency = await requireAgency(ctx, opts.agency);
        const {
          webhook: created,
          secret,
          standard_webhooks_secret,
        } = await ctx.settings().createWebhook(PLATFORM, {
          agencyId: agency.id,
          url: opts.url,
          eventTypes: opts.events,
          description: opts.description ?? null,
          rateLimit: rateLimitOf(opts.rateLimit) ?? null,
        });
        printResult(ctx.io, opts.json, { ...created, secret, standard_webhooks_secret }, [
          `Created webhook ${created.id} for agency ${agency.id} "${agency.name}", state ${created.state}:`,
          `  url: ${created.url}`,
          `  events: ${created.events.join(', ')}`,
          `  rate limit: ${describeRateLimit(created.rate_limit)}`,
          'Its signing secret will not be shown again; store it now:',
          secret,
          ...standardFormLines(standard_webhooks_secret),
        ]);
      },
    );
}

/** `webhook list`: an agency's webhooks with their state. */
function addListCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('list')
    .description("list an agency's webhooks with their state (never their secrets)")
    .usage('--agency <id> [--json]')
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .option(...JSON_OPTION)
    .action(async (opts: { agency: string; json?: boolean }) => {
      const agency = await requireAgency(ctx, opts.agency);
      const webhooks = await ctx.settings().listWebhooks(PLATFORM, agency.id);
      const human =
        webhooks.length === 0
          ? [`Agency ${agency.id} "${agency.name}" has no webhooks.`]
          : [
              `Agency ${agency.id} "${agency.name}" has ${webhooks.length} webhook${webhooks.length > 1 ? 's' : ''}:`,
              ...webhooks.flatMap(webhookLines),
            ];
      printResult(ctx.io, opts.json, { agency_id: agency.id, webhooks }, human);
    });
}

/** `webhook disable`: switches a webhook off. */
function addDisableCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('disable')
    .description('switch a webhook off: nothing more is delivered and pending retries are dropped')
    .usage('<id> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const updated = await ctx.settings().setWebhookEnabled(PLATFORM, opts.id, false);
      printResult(ctx.io, opts.json, updated, [
        `Webhook ${updated.id} is ${updated.state.replace('_', ' ')}: nothing more is delivered to ${updated.url}.`,
        `Switch it back on with 'tripctl webhook enable ${updated.id}'.`,
      ]);
    });
}

/** `webhook enable`: switches a webhook back on. */
function addEnableCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('enable')
    .description('switch a webhook back on with a fresh failure streak (also after a switch-off)')
    .usage('<id> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const updated = await ctx.settings().setWebhookEnabled(PLATFORM, opts.id, true);
      printResult(ctx.io, opts.json, updated, [
        `Webhook ${updated.id} is ${updated.state}: new events are delivered to ${updated.url}.`,
        'Events recorded while it was off are not redelivered; read them with GET /events.',
      ]);
    });
}

/** `webhook update`: a webhook's new URL, event types or description. */
function addUpdateCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('update')
    .description("change a webhook's URL, event types, description or rate limit")
    .usage('<id> [--url <url>] [--events <list>] [--description <text>] [--rate-limit <n|off>] [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option('--url <url>', 'the new https URL', parseWebhookUrl)
    .option('--events <list>', 'the new comma-separated event types, or all', parseEventTypes)
    .option('--description <text>', 'a new note for the owners', parseDescription)
    .option(...RATE_LIMIT_OPTION)
    .option(...JSON_OPTION)
    .action(
      async (
        _id: unknown,
        opts: {
          id: string;
          url?: string;
          events?: string[];
          description?: string;
          rateLimit?: RateLimitOption;
          json?: boolean;
        },
      ) => {
        const { url, events, description } = opts;
        const rateLimit = rateLimitOf(opts.rateLimit);
        if ([url, events, description, rateLimit].every((change) => change === undefined)) {
          throw usageError('nothing to change: give --url, --events, --description or --rate-limit.');
        }
        const updated = await ctx.settings().updateWebhook(PLATFORM, opts.id, {
          url,
          eventTypes: events,
          description,
          rateLimit,
        });
        printResult(ctx.io, opts.json, updated, [
          `Updated webhook ${updated.id}, state ${updated.state}:`,
          `  url: ${updated.url}`,
          `  events: ${updated.events.join(', ')}`,
          `  rate limit: ${describeRateLimit(updated.rate_limit)}`,
        ]);
      },
    );
}

/** `webhook rotate-secret`: a new signing secret, the old one signing for the overlap. */
function addRotateSecretCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('rotate-secret')
    .description('a new signing secret, printed once; the old one keeps signing for the overlap')
    .usage('<id> [--overlap <duration>] [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(
      '--overlap <duration>',
      'how long the old secret keeps signing, e.g. 24h, 30m, 0s (at most 7d)',
      parseOverlap,
      24 * 3600_000,
    )
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; overlap: number; json?: boolean }) => {
      const rotated = await ctx.settings().rotateSecret(PLATFORM, opts.id, { overlapMs: opts.overlap });
      printResult(ctx.io, opts.json, rotated, [
        `Rotated the secret of webhook ${rotated.webhook_id}; the previous secret signs until ${formatTime(rotated.previous_secrets_expire_at)}.`,
        'The new signing secret will not be shown again; store it now:',
        rotated.secret,
        ...standardFormLines(rotated.standard_webhooks_secret),
      ]);
    });
}

/** `webhook test`: a test delivery to one webhook. */
function addTestCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('test')
    .description('queue a test delivery (an evt_test_… event about a placeholder object) to one webhook')
    .usage('<id> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const sent = await ctx.settings().sendTestEvent(PLATFORM, opts.id);
      printResult(ctx.io, opts.json, sent, [
        `Queued test event ${sent.event.id} (${sent.event.type}) for webhook ${sent.webhook_id}; see 'tripctl webhook attempts ${sent.webhook_id}'.`,
      ]);
    });
}

/** `webhook redeliver`: the agency's events since a time, queued again for one webhook. */
function addRedeliverCommand(webhook: Command, ctx: Context): void {
  webhook
    .command('redeliver')
    .description(
      "queue again the agency's events of the webhook's types since a time (within EVENT_RETENTION)",
    )
    .usage('<id> --since <time> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .requiredOption('--since <time>', 'an ISO 8601 time, or a duration ago such as 6h or 2d', parseSince)
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; since: Date; json?: boolean }) => {
      const progress = progressReporter(ctx.io.stderr, 'redelivered');
      const result = await ctx
        .settings()
        .redeliver(PLATFORM, opts.id, { since: opts.since, onProgress: progress.update })
        .finally(progress.end);
      printResult(ctx.io, opts.json, result, [
        `Queued ${result.events} event${result.events === 1 ? '' : 's'} since ${formatTime(result.since)} for webhook ${result.webhook_id}.`,
      ]);
    });
}

/** An ISO 8601 time, or a duration before now. */
function parseSince(value: string): Date {
  const text = value.trim();
  if (/^\d+(ms|s|m|h|d)$/.test(text)) return new Date(Date.now() - parseOverlap(text));
  const time = isCalendarTime(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(time.getTime())) {
    throw new InvalidArgumentError(`'${value}' is not an ISO 8601 time or a duration such as 6h.`);
  }
  return time;
}
