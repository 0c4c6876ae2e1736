import type { Command } from 'commander';
import { parseHttpUrl, parseName, SCOPES } from './args.ts';
import { defaultBaseUrl } from './config.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { seedDemoAgency } from './demo-seed.ts';
import { printResult } from './output.ts';

export function registerDemo(program: Command, ctx: Context): void {
  const demo = program.command('demo').description('demo data for trying the API');

  demo
    .command('seed')
    .description(
      'create a new demo agency (API on, subscription active) with an owner, golf trips in every ' +
        'status, payments, contacts and a key with every scope; each run makes another agency',
    )
    .option(
      '--base-url <url>',
      'where the API listens, for the curl line (default http://localhost:$PORT)',
      parseHttpUrl,
    )
    .option('--name <name>', 'the demo agency name', parseName)
    .option(...JSON_OPTION)
    .action(async (opts: { baseUrl?: string; name?: string; json?: boolean }) => {
      const baseUrl = opts.baseUrl ?? defaultBaseUrl(ctx.env);
      const seed = await seedDemoAgency(ctx.db(), { name: opts.name, scopes: [...SCOPES] });
      const curl = `curl -H "Authorization: Bearer ${seed.key.key}" ${baseUrl}/api/v1/trips/${seed.featuredTripId}`;
      const data = {
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
        curl,
      };
      printResult(ctx.io, opts.json, data, [
        `Created demo agency ${seed.agencyId} "${seed.agencyName}": API enabled, subscription active.`,
        `Owner: ${seed.ownerEmail} (${seed.ownerId})`,
        `Seeded ${seed.tripIds.length} trips (every status), 1 template, ${seed.paymentIds.length} payments, ` +
          `${seed.contactIds.length} contacts.`,
        `Key ${seed.key.id} with scopes ${seed.key.scopes.join(', ')}; this is the only time it is shown:`,
        seed.key.key,
        '',
        'Try it:',
        `  ${curl}`,
      ]);
    });
}
