import type { Command } from 'commander';
import { parseHttpUrl, parseName, SCOPES } from './args.ts';
import { defaultBaseUrl } from './config.ts';
import { JSON_OPTION, type Context } from './context.ts';
import { reuseDemoAgency, seedDemoAgency } from './demo-seed.ts';
import { printResult } from './output.ts';

export function registerDemo(program: Command, ctx: Context): void {
  const demo = program.command('demo').description('demo data for trying the API');

  demo
    .command('seed')
    .description(
      'create a new demo agency (API on, subscription active) with an owner, golf trips in every ' +
        'status, payments, contacts and a key with every scope; each run makes another agency, unless --reuse',
    )
    .option(
      '--base-url <url>',
      'where the API listens, for the curl line (default http://localhost:$PORT)',
      parseHttpUrl,
    )
    .option('--name <name>', 'the demo agency name', parseName)
    .option(
      '--reuse',
      'reuse the newest demo agency if there is one (a new key, the earlier demo keys revoked) ' +
        'instead of making another: what scripts/start.sh does on every run',
    )
    .option(...JSON_OPTION)
    .action(async (opts: { baseUrl?: string; name?: string; reuse?: boolean; json?: boolean }) => {
      const baseUrl = opts.baseUrl ?? defaultBaseUrl(ctx.env);
      const input = { name: opts.name, scopes: [...SCOPES] };
      const reused = opts.reuse ? await reuseDemoAgency(ctx.db(), input) : undefined;
      const seed = reused ?? (await seedDemoAgency(ctx.db(), input));
      const curl = `curl -H "Authorization: Bearer ${seed.key.key}" ${baseUrl}/api/v1/trips${seed.featuredTripId ? `/${seed.featuredTripId}` : ''}`;
      const data = {
        reused: reused !== undefined,
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
        `${reused ? 'Reusing' : 'Created'} demo agency ${seed.agencyId} "${seed.agencyName}": API enabled, subscription active.`,
        `Owner: ${seed.ownerEmail} (${seed.ownerId})`,
        `${reused ? 'It has' : 'Seeded'} ${seed.tripIds.length} trips, 1 template, ${seed.paymentIds.length} payments, ` +
          `${seed.contactIds.length} contacts.`,
        `Key ${seed.key.id} with scopes ${seed.key.scopes.join(', ')}; this is the only time it is shown:`,
        seed.key.key,
        '',
        'Try it:',
        `  ${curl}`,
      ]);
    });
}
