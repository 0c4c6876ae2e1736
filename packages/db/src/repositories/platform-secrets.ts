import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

type PlatformSecretName = 'event_cursor_key' | 'webhook_signing_key_seal';

/** One of the platform's own secrets (migration 0013); throws when the schema is not migrated. */
export async function platformSecret(db: Kysely<Database>, name: PlatformSecretName): Promise<Buffer> {
  const row = await db
    .selectFrom('platform_secrets')
    .select('secret')
    .where('name', '=', name)
    .executeTakeFirst();
  if (!row) throw new Error(`no platform secret ${name}: is the database migrated (tripctl migrate)?`);
  return row.secret;
}
