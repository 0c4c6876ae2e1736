import type { Command } from 'commander';
import { checkWebhookUrl } from '@trips/settings';
import { fromCheck, parseHttpUrl, parseName, SCOPES } from './args.ts';
import { defaultBaseUrl } from './config.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { prepareDemo } from './demo-prepare.ts';
import { seedDemoAgency, type DemoSeed } from './demo-seed.ts';
import { usageError } from './errors.ts';
import { printResult } from './output.ts';
import { readPassword } from './password-input.ts';

/**
 * The receiver's URL as the settings module stores it, so that the kept webhook's URL compares
 * equal; a private address is allowed here and checked again, against the setting, on creation.
 */
const parseReceiverUrl = fromCheck((value) => checkWebhookUrl(value, { allowPrivateNetworks: true }));

const BASE_URL_OPTION = [
  '--base-url <url>',
  'where the API listens, for the curl line (default http://localhost:$PORT)',
  parseHttpUrl,
] as const;

export function registerDemo(program: Command, ctx: Context): void {
  const demo = program.command('demo').description('demo data for trying the API');

  demo
    .command('seed')
    .description(
      'create a new demo agency (API on, subscription active) with an owner, golf trips in every ' +
        'status, payments, contacts and a key with every scope; each run makes another agency',
    )
    .option(...BASE_URL_OPTION)
    .option('--name <name>', 'the demo agency name', parseName)
    .option(...JSON_OPTION)
    .action(async (opts: { baseUrl?: string; name?: string; json?: boolean }) => {
      // A bad PORT is refused before anything is made.
      const baseUrl = opts.baseUrl ?? defaultBaseUrl(ctx.env);
      const seed = await seedDemoAgency(ctx.db(), { name: opts.name, scopes: [...SCOPES] });
      const curl = curlLine(seed, baseUrl);
      printResult(ctx.io, opts.json, { ...seedData(seed), curl }, [
        `Created demo agency ${seed.agencyId} "${seed.agencyName}": API enabled, subscription active.`,
        `Owner: ${seed.ownerEmail} (${seed.ownerId})`,
        `Seeded ${seed.tripIds.length} trips, 1 template, ${seed.paymentIds.length} payments, ` +
          `${seed.contactIds.length} contacts.`,
        `Key ${seed.key.id} with scopes ${seed.key.scopes.join(', ')}; this is the only time it is shown:`,
        seed.key.key,
        '',
        'Try it:',
        `  ${curl}`,
      ]);
    });

  demo
    .command('prepare')
    .description(
      'what scripts/start.sh runs: the newest demo agency (seeded if there is none), its key, a webhook ' +
        "to the demo receiver and the owner's password (read from stdin), each kept from the last run " +
        'while it still works: no key revoked, no owner signed out, no second webhook. The key and ' +
        "the webhook's secret are kept in --state, readable by its owner alone",
    )
    .requiredOption('--receiver-url <url>', "the demo receiver's https URL", parseReceiverUrl)
    .requiredOption('--state <file>', "where the key and the webhook's secret are kept, e.g. .demo/demo.json")
    .option(...BASE_URL_OPTION)
    .option(...JSON_OPTION)
    .action(async (opts: { receiverUrl: string; state: string; baseUrl?: string; json?: boolean }) => {
      const baseUrl = opts.baseUrl ?? defaultBaseUrl(ctx.env);
      const ownerPassword = await readPassword(ctx.io, "The demo owner's password: ");
      if (ownerPassword === '') throw usageError('no password given on stdin.');
      const { seed, webhook, made } = await prepareDemo(ctx, {
        receiverUrl: opts.receiverUrl,
        statePath: opts.state,
        ownerPassword,
        scopes: [...SCOPES],
      });
      const curl = curlLine(seed, baseUrl);
      const anew = (what: keyof typeof made) => (made[what] ? 'new' : 'kept');
      printResult(
        ctx.io,
        opts.json,
        { ...seedData(seed), curl, webhook_id: webhook.id, webhook_secret: webhook.secret, made },
        [
          `Demo agency ${seed.agencyId} "${seed.agencyName}" (${anew('agency')}), owner ${seed.ownerEmail} ` +
            `(password ${made.password ? 'set' : 'kept'}).`,
          `Key ${seed.key.id} (${anew('key')}), kept in ${opts.state}:`,
          seed.key.key,
          `Webhook ${webhook.id} (${anew('webhook')}) → ${opts.receiverUrl}`,
          '',
          'Try it:',
          `  ${curl}`,
        ],
      );
    });
}

function curlLine(seed: DemoSeed, baseUrl: string): string {
  const trip = seed.featuredTripId ? `/${seed.featuredTripId}` : '';
  return `curl -H "Authorization: Bearer ${seed.key.key}" ${baseUrl}/api/v1/trips${trip}`;
}

function seedData(seed: DemoSeed) {
  return {
    agency_id: seed.agencyId,
    agency_name: seed.agencyName,
    owner_user_id: seed.ownerId,
    owner_email: seed.ownerEmail,
    key_id: seed.key.id,
    key: seed.key.key,
    scopes: seed.key.scopes,
    trip_ids: seed.tripIds,
    template_id: seed.templateId,
    payment_ids: seed.paymentIds,
    contact_ids: seed.contactIds,
  };
}
