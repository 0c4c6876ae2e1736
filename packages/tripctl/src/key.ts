import { formatTime } from '@trips/contracts';
import { InvalidArgumentError, type Command } from 'commander';
import { PLATFORM } from '@trips/settings';
import { requireAgency } from './agency.ts';
import { idOf, parseName, parseScopes, SCOPES } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { failure, usageError } from './errors.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { printResult } from './output.ts';

const keyId = idOf('key', 'a key');

/** What the settings page and `key list` show of a key: `tps_` and 8 characters, maybe with its `…`. */
const SHOWN_PREFIX = /^(tps_[0-9A-Za-z]{8})(…|\.\.\.)?$/;

/** A key id (key_…) or a key's shown prefix (tps_…), which `revoke` resolves within an agency. */
function parseKeyRef(value: string): string {
  const prefix = SHOWN_PREFIX.exec(value.trim())?.[1];
  if (prefix) return prefix;
  if (value.trim().startsWith('tps_')) {
    throw new InvalidArgumentError(
      `'${value}' is not a key prefix: a prefix is tps_ and 8 characters, as the settings page shows it.`,
    );
  }
  return keyId(value);
}

/**
 * The key a reference names. A prefix is only a few characters of the key, so it names a key
 * within one agency, and only when no other key of that agency shares it.
 */
async function keyIdOf(ctx: Context, ref: string, agencyId: string | undefined): Promise<string> {
  if (!ref.startsWith('tps_')) return ref;
  if (!agencyId) {
    throw usageError(`a prefix names a key within its agency: add --agency agy_… to 'key revoke ${ref}'.`);
  }
  const matches = (await ctx.settings().listKeys(PLATFORM, agencyId)).filter((k) => k.prefix === ref);
  if (matches.length === 0) throw failure(`agency ${agencyId} has no key with the prefix ${ref}.`);
  if (matches.length > 1) {
    throw failure(
      `${matches.length} keys of agency ${agencyId} have the prefix ${ref}: give the id of one (${matches.map((k) => k.id).join(', ')}).`,
    );
  }
  return matches[0]!.id;
}

export function registerKey(program: Command, ctx: Context): void {
  const key = program.command('key').description('create, list, rescope and revoke API keys');

  key
    .command('create')
    .description('create an API key; the key is printed once and only its hash is stored')
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .requiredOption('--scopes <list>', `comma-separated, from ${SCOPES.join(', ')}`, parseScopes)
    .option('--name <name>', 'a label to recognise the key by', parseName)
    .option(...JSON_OPTION)
    .action(async (opts: { agency: string; scopes: string[]; name?: string; json?: boolean }) => {
      const agency = await requireAgency(ctx, opts.agency);
      const created = await ctx.settings().createKey(PLATFORM, {
        agencyId: agency.id,
        scopes: opts.scopes,
        name: opts.name ?? null,
      });
      // A key that cannot be used yet is still created; say why calls will be refused (spec 5.4).
      if (!agency.api_enabled) {
        ctx.io.stderr.write(
          `note: API access is off for ${agency.id}; calls get 403 api_not_enabled until ` +
            `'tripctl agency update ${agency.id} --api-enabled true'.\n`,
        );
      }
      const trialOver = agency.trial_ends_at !== null && agency.trial_ends_at.getTime() < Date.now();
      if (
        agency.subscription_status === 'expired' ||
        (agency.subscription_status === 'trialing' && trialOver)
      ) {
        ctx.io.stderr.write(
          `note: the trial or subscription of ${agency.id} is over; calls get 403 subscription_inactive.\n`,
        );
      }
      const label = opts.name ? ` "${opts.name}"` : '';
      printResult(ctx.io, opts.json, created, [
        `Created key ${created.id}${label} for agency ${agency.id} "${agency.name}" with scopes ${created.scopes.join(', ')}.`,
        'This is the only time the key is shown; store it now:',
        created.key,
      ]);
    });

  key
    .command('revoke')
    .description(
      'revoke an API key at once, by id or by the prefix the settings page and key list show ' +
        '(with --agency); revoking an already revoked key changes nothing',
    )
    .addArgument(objectIdArgument('the key id (key_…), or its prefix (tps_…)', parseKeyRef))
    .addOption(objectIdOption(parseKeyRef))
    .option('--agency <id>', 'the agency whose key has this prefix (agy_…)', idOf('agy', 'an agency'))
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; agency?: string; json?: boolean }) => {
      const id = await keyIdOf(ctx, opts.id, opts.agency);
      const revoked = await ctx.settings().revokeKey(PLATFORM, id);
      printResult(ctx.io, opts.json, { ...revoked, revoked: true }, [
        revoked.already_revoked
          ? `Key ${id} was already revoked at ${formatTime(revoked.revoked_at!)}.`
          : `Revoked key ${id}: calls with it now get 401 unauthorized.`,
      ]);
    });

  key
    .command('list')
    .description("an agency's keys: prefix, scopes, created, last used, revoked (never the key)")
    .requiredOption('--agency <id>', 'the agency id (agy_…)', idOf('agy', 'an agency'))
    .option(...JSON_OPTION)
    .action(async (opts: { agency: string; json?: boolean }) => {
      const keys = await ctx.settings().listKeys(PLATFORM, opts.agency);
      const time = (d: Date | null) => (d ? formatTime(d) : 'never');
      printResult(
        ctx.io,
        opts.json,
        { agency_id: opts.agency, keys },
        keys.length === 0
          ? [`Agency ${opts.agency} has no keys.`]
          : keys.map(
              (k) =>
                `${k.id}  ${k.prefix}…  ${k.revoked_at ? `revoked ${formatTime(k.revoked_at)}` : 'active'}  ` +
                `scopes ${k.scopes.join(',')}  created ${formatTime(k.created_at)}  last used ${time(k.last_used_at)}` +
                (k.name ? `  "${k.name}"` : ''),
            ),
      );
    });

  key
    .command('scopes')
    .description('add scopes to a key or remove them (a key keeps at least one)')
    .addArgument(objectIdArgument('the key id (key_…)', keyId))
    .addOption(objectIdOption(keyId))
    .option('--add <list>', `comma-separated scopes to add, from ${SCOPES.join(', ')}`, parseScopes)
    .option('--remove <list>', 'comma-separated scopes to remove', parseScopes)
    .option(...JSON_OPTION)
    .action(async (_id: unknown, opts: { id: string; add?: string[]; remove?: string[]; json?: boolean }) => {
      const id = opts.id;
      if (!opts.add && !opts.remove) throw usageError('nothing to change: give --add or --remove.');
      const updated = await ctx.settings().changeKeyScopes(PLATFORM, id, opts);
      printResult(ctx.io, opts.json, updated, [`Key ${id} now has scopes ${updated.scopes.join(', ')}.`]);
    });
}
