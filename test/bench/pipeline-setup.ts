// Prepares one pipeline's database for `pnpm bench:pipeline` with the packages of the checkout it
// sits in: the bench runs it from this checkout for ours and bare, and copies it into the
// baseline's temporary worktree for the baseline, so the baseline's database is migrated by the
// baseline's own migrations and its agency and webhook made by its own repositories. It migrates
// DATABASE_URL to that checkout's latest (nothing to do on a clone of the migrated template),
// creates an agency with the API on and one webhook on BENCH_WEBHOOK_URL for trip.created, and
// prints them as one JSON line: { agencyId, webhookId, secret, migration } (the tree's last migration,
// which the database is now at).
//
// Only what has the same name and signature at bfbf42d and now is used: the repositories were one
// module, `@trips/db`, then (since) one subpath each, `@trips/db/<file>`.
import { createDb, migrateToLatest, migrations } from '@trips/db';

type Db = ReturnType<typeof createDb>;

interface Repositories {
  createAgency(
    db: Db,
    input: { name: string; apiEnabled: boolean; subscriptionStatus: 'active' },
  ): Promise<{ id: string }>;
  createWebhook(
    db: Db,
    input: { agencyId: string; url: string; eventTypes: string[] },
  ): Promise<{ webhook: { id: string }; secret: string }>;
}

/** A repository module by its subpath now, or the package's root at the baseline. */
async function repositories(subpath: string): Promise<Repositories> {
  const specifier = `@trips/db/${subpath}`;
  return ((await import(specifier).catch(() => undefined)) ??
    (await import('@trips/db'))) as unknown as Repositories;
}

const db = createDb(process.env.DATABASE_URL!, { max: 1, applicationName: 'bench-setup' });
try {
  await migrateToLatest(db);
  const { createAgency } = await repositories('agencies');
  const { createWebhook } = await repositories('webhooks');
  const agency = await createAgency(db, { name: 'Pipeline', apiEnabled: true, subscriptionStatus: 'active' });
  const { webhook, secret } = await createWebhook(db, {
    agencyId: agency.id,
    url: process.env.BENCH_WEBHOOK_URL!,
    eventTypes: ['trip.created'],
  });
  const migration = Object.keys(migrations).sort().at(-1);
  console.log(JSON.stringify({ agencyId: agency.id, webhookId: webhook.id, secret, migration }));
} finally {
  await db.destroy();
}
