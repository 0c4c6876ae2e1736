import { randomBytes } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** D7: `whsec_` then 32 random bytes in base64url (43 characters). */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

interface RotatedSecret {
  /** The new secret: the only time it is handed out (D7). */
  secret: string;
  /** Until when the secrets signing before the rotation still sign (D7's overlap). */
  previousExpireAt: Date;
}

/**
 * Adds a new secret and gives every secret still signing an end `overlapMs` from now (or keeps its
 * earlier end), so both sign until then (D7). The dispatcher reads the unexpired secrets at every
 * attempt, so nothing else needs telling.
 */
export async function rotateWebhookSecretIn(
  trx: Transaction<Database>,
  webhookId: string,
  overlapMs: number,
): Promise<RotatedSecret> {
  const secret = generateWebhookSecret();
  const { rows } = await sql<{ until: Date }>`
    SELECT now() + make_interval(secs => ${overlapMs / 1000}) AS until`.execute(trx);
  const until = rows[0]!.until;
  await trx
    .updateTable('webhook_secrets')
    .set({ expires_at: sql<Date>`least(coalesce(expires_at, ${until}), ${until})` })
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .execute();
  await trx.insertInto('webhook_secrets').values({ webhook_id: webhookId, secret }).execute();
  return { secret, previousExpireAt: until };
}

/** A webhook's secrets as owners may see them: when made and until when they sign, never the secret. */
export async function listWebhookSecretTimes(
  db: Db,
  webhookId: string,
): Promise<{ id: string; created_at: Date; expires_at: Date | null; active: boolean }[]> {
  const result = await sql<{ id: string; created_at: Date; expires_at: Date | null; active: boolean }>`
    SELECT id, created_at, expires_at, (expires_at IS NULL OR expires_at > now()) AS active
      FROM webhook_secrets WHERE webhook_id = ${webhookId}
     ORDER BY created_at DESC, id`.execute(db);
  return result.rows;
}
