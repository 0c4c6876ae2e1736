import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import {
  generateApiKey,
  insertApiKey,
  listApiKeys,
  lockApiKey,
  setApiKeyRevoked,
  setApiKeyScopes,
} from '@trips/db/api-keys';
import { authorize, requireAgency, type Actor } from './access.ts';
import { audit } from './audit.ts';
import type { SettingsContext } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { checkScopes } from './validate.ts';

export interface ApiKeyView {
  id: string;
  name: string | null;
  prefix: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

function keyView(k: ApiKeyView): ApiKeyView {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    created_at: k.created_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
  };
}

async function lockKey(trx: Kysely<Database>, actor: Actor, id: string) {
  const key = await lockApiKey(trx, id);
  if (!key) throw notFound(`no key ${id}.`);
  const who = await authorize(trx, actor, key.agency_id);
  return { key, who };
}

/** API keys (D2): created, listed, their scopes changed and revoked by an owner of the agency. */
export function keyActions({ db, inTransaction }: SettingsContext) {
  /**
   * Adds and removes scopes of a key in one transaction (`remove` wins over `add`), so that no
   * concurrent change sees half of it. Each kind of change is audited as its own entry.
   */
  async function changeKeyScopes(actor: Actor, keyId: string, change: { add?: string[]; remove?: string[] }) {
    const add = change.add?.length ? checkScopes(change.add) : [];
    const remove = change.remove?.length ? checkScopes(change.remove) : [];
    return inTransaction(async (trx) => {
      const { key, who } = await lockKey(trx, actor, keyId);
      if (key.revoked_at) throw invalid(`key ${keyId} is revoked; create a new one.`);
      const scopes = [...key.scopes, ...add.filter((s) => !key.scopes.includes(s))].filter(
        (s) => !remove.includes(s),
      );
      if (scopes.length === 0) throw invalid(`a key keeps at least one scope; revoke key ${keyId} instead.`);
      const added = scopes.filter((s) => !key.scopes.includes(s));
      const removed = key.scopes.filter((s) => !scopes.includes(s));
      if (added.length + removed.length === 0) return keyView(key);
      const updated = (await setApiKeyScopes(trx, keyId, scopes))!;
      if (added.length > 0) {
        await audit(trx, who, key.agency_id, 'api_key.scopes_added', 'api_key', keyId, {
          added,
          scopes: updated.scopes,
        });
      }
      if (removed.length > 0) {
        await audit(trx, who, key.agency_id, 'api_key.scopes_removed', 'api_key', keyId, {
          removed,
          scopes: updated.scopes,
        });
      }
      return keyView(updated);
    });
  }

  return {
    /** Creates a key; the plaintext `key` is in the answer only, never stored or audited. */
    async createKey(actor: Actor, input: { agencyId: string; scopes: string[]; name?: string | null }) {
      const scopes = checkScopes(input.scopes);
      const name = input.name == null ? null : input.name.trim();
      if (name !== null && (name.length < 1 || name.length > 200))
        throw invalid('a key name has 1 to 200 characters.');
      return inTransaction(async (trx) => {
        await requireAgency(trx, input.agencyId);
        const who = await authorize(trx, actor, input.agencyId);
        const { key, prefix, hash } = generateApiKey();
        const row = await insertApiKey(trx, { agencyId: input.agencyId, scopes, name, prefix, hash });
        await audit(trx, who, input.agencyId, 'api_key.created', 'api_key', row.id, { prefix, scopes, name });
        return { ...keyView(row), agency_id: row.agency_id, key };
      });
    },

    async listKeys(actor: Actor, agencyId: string): Promise<ApiKeyView[]> {
      await requireAgency(db, agencyId);
      await authorize(db, actor, agencyId);
      return (await listApiKeys(db, agencyId)).map(keyView);
    },

    changeKeyScopes,

    async addKeyScopes(actor: Actor, keyId: string, scopes: string[]) {
      return changeKeyScopes(actor, keyId, { add: checkScopes(scopes) });
    },

    async removeKeyScopes(actor: Actor, keyId: string, scopes: string[]) {
      return changeKeyScopes(actor, keyId, { remove: checkScopes(scopes) });
    },

    /** Revokes at once; revoking a revoked key changes nothing and is not audited again. */
    async revokeKey(actor: Actor, keyId: string) {
      return inTransaction(async (trx) => {
        const { key, who } = await lockKey(trx, actor, keyId);
        if (key.revoked_at) return { ...keyView(key), already_revoked: true };
        const updated = await setApiKeyRevoked(trx, keyId);
        await audit(trx, who, key.agency_id, 'api_key.revoked', 'api_key', keyId, { prefix: key.prefix });
        return { ...keyView(updated), already_revoked: false };
      });
    },
  };
}
