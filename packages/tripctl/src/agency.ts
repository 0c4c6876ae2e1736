import { Option, type Command } from 'commander';
import type { Agency, SubscriptionStatus } from '@trips/db';
import { createAgency, findAgency, listAgencies, updateAgency } from '@trips/db/agencies';
import { idOf, parseBoolean, parseName, SUBSCRIPTIONS } from './args.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { objectIdArgument, objectIdOption } from './object-id.ts';
import { usageError, failure } from './errors.ts';
import { printResult, yesNo } from './output.ts';

function agencyJson(a: Agency) {
  return {
    id: a.id,
    name: a.name,
    api_enabled: a.api_enabled,
    subscription_status: a.subscription_status,
    trial_ends_at: a.trial_ends_at,
    created_at: a.created_at,
    updated_at: a.updated_at,
  };
}

function agencyLine(verb: string, a: Agency): string {
  return `${verb} agency ${a.id} "${a.name}": API enabled ${yesNo(a.api_enabled)}, subscription ${a.subscription_status}.`;
}

/** For commands that add to an agency: a clear "no agency" (exit 1) rather than a foreign-key error. */
export async function requireAgency(ctx: Context, id: string): Promise<Agency> {
  const agency = await findAgency(ctx.db(), id);
  if (!agency) throw failure(`no agency ${id}.`);
  return agency;
}

const agencyId = idOf('agy', 'an agency');

/**
 * The same in `agency create` and `agency update`: `--api-enabled` alone turns API access on,
 * `--api-enabled true|false` says which.
 */
const apiEnabledOption = () =>
  new Option('--api-enabled [true|false]', 'turn API access on (alone or true) or off (false)').argParser(
    parseBoolean,
  );

const subscriptionOption = () =>
  new Option(
    '--subscription <status>',
    'trial or subscription state; API calls need trialing or active',
  ).choices(SUBSCRIPTIONS);

export function registerAgency(program: Command, ctx: Context): void {
  const agency = program.command('agency').description('create and change agencies');

  agency
    .command('create')
    .description('create an agency (API access off and a running trial unless told)')
    .requiredOption('--name <name>', 'the agency name', parseName)
    .addOption(apiEnabledOption())
    .addOption(subscriptionOption().default('trialing'))
    .option(...JSON_OPTION)
    .action(
      async (opts: {
        name: string;
        apiEnabled?: boolean;
        subscription: SubscriptionStatus;
        json?: boolean;
      }) => {
        const created = await createAgency(ctx.db(), {
          name: opts.name,
          apiEnabled: opts.apiEnabled ?? false,
          subscriptionStatus: opts.subscription,
        });
        printResult(ctx.io, opts.json, agencyJson(created), [agencyLine('Created', created)]);
      },
    );

  agency
    .command('list')
    .description('every agency, newest first: id, name, API access, subscription')
    .option(...JSON_OPTION)
    .action(async (opts: { json?: boolean }) => {
      const agencies = await listAgencies(ctx.db());
      printResult(
        ctx.io,
        opts.json,
        { agencies: agencies.map(agencyJson) },
        agencies.length === 0
          ? ['No agencies yet; create one with tripctl agency create --name <name>.']
          : agencies.map(
              (a) =>
                `${a.id}  API ${a.api_enabled ? 'on ' : 'off'}  ${a.subscription_status.padEnd(8)}  "${a.name}"`,
            ),
      );
    });

  agency
    .command('update')
    .description('change API access, subscription state or name of an agency')
    .addArgument(objectIdArgument('the agency id (agy_…)', agencyId))
    .addOption(objectIdOption(agencyId))
    .addOption(apiEnabledOption())
    .addOption(subscriptionOption())
    .option('--name <name>', 'rename the agency', parseName)
    .option(...JSON_OPTION)
    .action(
      async (
        _id: unknown,
        opts: {
          id: string;
          apiEnabled?: boolean;
          subscription?: SubscriptionStatus;
          name?: string;
          json?: boolean;
        },
      ) => {
        const id = opts.id;
        if (opts.apiEnabled === undefined && opts.subscription === undefined && opts.name === undefined) {
          throw usageError('nothing to change: give --api-enabled, --subscription or --name.');
        }
        const updated = await updateAgency(ctx.db(), id, {
          apiEnabled: opts.apiEnabled,
          subscriptionStatus: opts.subscription,
          name: opts.name,
        });
        if (!updated) throw failure(`no agency ${id}.`);
        printResult(ctx.io, opts.json, agencyJson(updated), [agencyLine('Updated', updated)]);
      },
    );
}
