import type { Command } from 'commander';
import { formatTime } from '@trips/contracts';
import { PLATFORM } from '@trips/settings';
import { parseOverlap, webhookId } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { printResult } from './output.ts';

// A webhook's ed25519 signatures (decisions.md D11), as owners switch them on the settings page:
// on, the key rotated with overlap, off. The public key is printed; the private key never leaves
// the database, where it is sealed.

export function addSigningCommands(webhook: Command, ctx: Context): void {
  webhook
    .command('enable-ed25519')
    .description(
      "sign deliveries with ed25519 too (v1a in webhook-signature); prints the webhook's public key",
    )
    .usage('<id> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const on = await ctx.settings().enableEd25519(PLATFORM, opts.id);
      printResult(ctx.io, opts.json, on, [
        `Webhook ${on.webhook_id} signs with ed25519: each delivery's webhook-signature carries a v1a that this public key verifies:`,
        on.public_key,
      ]);
    });

  webhook
    .command('rotate-ed25519-key')
    .description('a new ed25519 key pair; the old key keeps signing for the overlap')
    .usage('<id> [--overlap <duration>] [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(
      '--overlap <duration>',
      'how long the old key keeps signing, e.g. 24h, 30m, 0s (at most 7d)',
      parseOverlap,
      24 * 3600_000,
    )
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; overlap: number; json?: boolean }) => {
      const rotated = await ctx.settings().rotateSigningKey(PLATFORM, opts.id, { overlapMs: opts.overlap });
      printResult(ctx.io, opts.json, rotated, [
        `Rotated the ed25519 key of webhook ${rotated.webhook_id}; the previous key signs until ${formatTime(rotated.previous_keys_expire_at)}. The new public key:`,
        rotated.public_key,
      ]);
    });

  webhook
    .command('disable-ed25519')
    .description('stop signing deliveries with ed25519: no v1a from the next attempt')
    .usage('<id> [--json]')
    .addArgument(objectIdArgument('the webhook id (whk_…)', webhookId()))
    .addOption(objectIdOption(webhookId()))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; json?: boolean }) => {
      const off = await ctx.settings().disableEd25519(PLATFORM, opts.id);
      printResult(ctx.io, opts.json, off, [
        `Webhook ${off.webhook_id} no longer signs with ed25519; its deliveries carry no v1a from the next attempt.`,
      ]);
    });
}
