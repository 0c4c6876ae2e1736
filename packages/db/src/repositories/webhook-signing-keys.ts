import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.ts';
import { platformSecret } from './platform-secrets.ts';

// A webhook's ed25519 key pairs (D11, migration 0022). The private key is stored sealed and is
// opened only to sign (the dispatcher): it is never answered to owners, tripctl or a log.

type Db = Kysely<Database> | Transaction<Database>;

/** A key pair as made by the signing module (contracts' generateSigningKeyPair). */
export interface SigningKeyPair {
  /** `whpk_…`, shown to owners. */
  publicKey: string;
  /** PKCS #8 DER. */
  privateKey: Buffer;
}

/** What owners may see of a key: the public key, when made and until when it signs (null: no end yet). */
export interface PublicKeyView {
  public_key: string;
  created_at: Date;
  expires_at: Date | null;
}

/** The platform's sealing key for private keys (migration 0022); throws when not migrated. */
export const signingKeySealKey = (db: Kysely<Database>) => platformSecret(db, 'webhook_signing_key_seal');

/** AES-256-GCM, the webhook's id as associated data: a sealed key opens only as that webhook's. */
function seal(privateKey: Buffer, sealKey: Buffer, webhookId: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey, iv).setAAD(Buffer.from(webhookId, 'utf8'));
  const text = Buffer.concat([cipher.update(privateKey), cipher.final()]);
  return [iv, text, cipher.getAuthTag()].map((b) => b.toString('base64url')).join('.');
}

/** The PKCS #8 private key of a sealed one; throws when it was sealed under another key or webhook. */
export function openSigningKey(sealed: string, sealKey: Buffer, webhookId: string): Buffer {
  const [iv, text, tag] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', sealKey, iv!).setAAD(Buffer.from(webhookId, 'utf8'));
  decipher.setAuthTag(tag!);
  return Buffer.concat([decipher.update(text!), decipher.final()]);
}

/**
 * Adds a key pair that signs from now. Every key still signing gets an end `overlapMs` from now
 * (or keeps an earlier one), as a secret's rotation does: both sign until then. Answers that end,
 * or null when no key was signing (ed25519 just switched on).
 */
export async function addSigningKeyIn(
  trx: Transaction<Database>,
  webhookId: string,
  pair: SigningKeyPair,
  overlapMs: number,
): Promise<{ previousExpireAt: Date | null }> {
  const sealKey = await signingKeySealKey(trx);
  const { rows } = await sql<{ until: Date }>`
    SELECT now() + make_interval(secs => ${overlapMs / 1000}) AS until`.execute(trx);
  const until = rows[0]!.until;
  const ended = await trx
    .updateTable('webhook_signing_keys')
    .set({ expires_at: sql<Date>`least(coalesce(expires_at, ${until}), ${until})` })
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .executeTakeFirst();
  await trx
    .insertInto('webhook_signing_keys')
    .values({
      webhook_id: webhookId,
      public_key: pair.publicKey,
      private_key_sealed: seal(pair.privateKey, sealKey, webhookId),
    })
    .execute();
  return { previousExpireAt: Number(ended.numUpdatedRows) > 0 ? until : null };
}

/** Ends every key of the webhook now (ed25519 switched off); answers how many were signing. */
export async function endSigningKeysIn(trx: Transaction<Database>, webhookId: string): Promise<number> {
  const ended = await trx
    .updateTable('webhook_signing_keys')
    .set({ expires_at: sql<Date>`now()` })
    .where('webhook_id', '=', webhookId)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .executeTakeFirst();
  return Number(ended.numUpdatedRows);
}

/** The keys signing now of each webhook, newest first: public keys and times, never a private key. */
export async function listSigningKeys(
  db: Db,
  webhookIds: readonly string[],
): Promise<Map<string, PublicKeyView[]>> {
  const byWebhook = new Map<string, PublicKeyView[]>(webhookIds.map((id) => [id, []]));
  if (webhookIds.length === 0) return byWebhook;
  const rows = await db
    .selectFrom('webhook_signing_keys')
    .select(['webhook_id', 'public_key', 'created_at', 'expires_at'])
    .where('webhook_id', 'in', [...webhookIds])
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  for (const { webhook_id, ...key } of rows) byWebhook.get(webhook_id)?.push(key);
  return byWebhook;
}
