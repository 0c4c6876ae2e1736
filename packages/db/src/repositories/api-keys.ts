import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, SubscriptionStatus } from '../schema.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_RANDOM_LENGTH = 40;
/** D2: `tps_` then at least 32 base62 characters. */
export const API_KEY_PATTERN = /^tps_[0-9A-Za-z]{32,}$/;

/** Uniform base62 by rejection sampling: 248 is the largest multiple of 62 below 256. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** A new key in plaintext (to show once) with what is stored of it: its hash and a short prefix. */
export function generateApiKey(): { key: string; prefix: string; hash: Buffer } {
  const key = `tps_${randomBase62(KEY_RANDOM_LENGTH)}`;
  return { key, prefix: key.slice(0, 12), hash: hashApiKey(key) };
}

/** What an owner is shown of a key, and what the settings module works from; never the hash. */
const KEY_COLUMNS = [
  'id',
  'agency_id',
  'name',
  'prefix',
  'scopes',
  'created_at',
  'last_used_at',
  'revoked_at',
] as const;

interface CreatedApiKey {
  id: string;
  agency_id: string;
  prefix: string;
  scopes: string[];
  created_at: Date;
  /** The only time the plaintext exists outside the caller's hands. */
  key: string;
}

/** Stores a key made by generateApiKey (its hash and prefix, never the plaintext). */
export async function insertApiKey(
  db: Kysely<Database>,
  input: { agencyId: string; scopes: string[]; name: string | null; prefix: string; hash: Buffer },
) {
  const { agencyId, scopes, name, prefix, hash } = input;
  return db
    .insertInto('api_keys')
    .values({ agency_id: agencyId, scopes, name, prefix, hash })
    .returning(KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}

/**
 * A new key, stored. The demo seed, tests and benchmarks make their keys with it, so with the same
 * insert as an owner's key made on the settings page or with tripctl (insertApiKey).
 */
export async function createApiKey(
  db: Kysely<Database>,
  input: { agencyId: string; scopes: string[]; name?: string | null },
): Promise<CreatedApiKey> {
  const { key, prefix, hash } = generateApiKey();
  const row = await insertApiKey(db, {
    agencyId: input.agencyId,
    scopes: input.scopes,
    name: input.name ?? null,
    prefix,
    hash,
  });
  return {
    id: row.id,
    agency_id: row.agency_id,
    prefix: row.prefix,
    scopes: row.scopes,
    created_at: row.created_at,
    key,
  };
}

/** Revokes a key; answers false when there is no such key. Revoking twice keeps the first time. */
export async function revokeApiKey(db: Kysely<Database>, id: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows > 0n) return true;
  return (await db.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export interface KeyCredentials {
  keyId: string;
  agencyId: string;
  scopes: string[];
  revoked: boolean;
  apiEnabled: boolean;
  subscriptionStatus: SubscriptionStatus;
  trialEndsAt: Date | null;
}

/** Everything the auth checks of D1 need about a key, in one indexed lookup by its hash. */
export async function findKeyCredentials(
  db: Kysely<Database>,
  hash: Buffer,
): Promise<KeyCredentials | undefined> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('agencies as a', 'a.id', 'k.agency_id')
    .select([
      'k.id as keyId',
      'k.agency_id as agencyId',
      'k.scopes',
      'k.revoked_at',
      'a.api_enabled as apiEnabled',
      'a.subscription_status as subscriptionStatus',
      'a.trial_ends_at as trialEndsAt',
    ])
    .where('k.hash', '=', hash)
    .executeTakeFirst();
  if (!row) return undefined;
  const { revoked_at, ...rest } = row;
  return { ...rest, revoked: revoked_at !== null };
}

/** Records use in bulk: the API batches these so a request never waits on a write. */
export async function markKeysUsed(db: Kysely<Database>, keyIds: string[], at: Date): Promise<void> {
  if (keyIds.length === 0) return;
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', 'in', keyIds).execute();
}

export async function listApiKeys(db: Kysely<Database>, agencyId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'prefix', 'scopes', 'created_at', 'last_used_at', 'revoked_at'])
    .where('agency_id', '=', agencyId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Replaces a key's scopes (callers check them against D2's catalogue); undefined when there is no such key. */
export async function setApiKeyScopes(db: Kysely<Database>, id: string, scopes: string[]) {
  return db
    .updateTable('api_keys')
    .set({ scopes: [...new Set(scopes)] })
    .where('id', '=', id)
    .returning(KEY_COLUMNS)
    .executeTakeFirst();
}

/** A key, locked until the transaction ends; undefined when there is no such key. */
export async function lockApiKey(trx: Kysely<Database>, id: string) {
  return trx.selectFrom('api_keys').select(KEY_COLUMNS).where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * Revokes a key now and answers it as it is after; the caller has locked it and checked that it
 * was not revoked already (revokeApiKey is the one that keeps the first time).
 */
export async function setApiKeyRevoked(db: Kysely<Database>, id: string) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .returning(KEY_COLUMNS)
    .executeTakeFirstOrThrow();
}
