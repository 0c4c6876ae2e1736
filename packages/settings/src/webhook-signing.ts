import { generateSigningKeyPair } from '@trips/contracts/webhook-signing';
import { addSigningKeyIn, endSigningKeysIn, listSigningKeys } from '@trips/db/webhook-signing-keys';
import type { Actor } from './access.ts';
import { audit } from './audit.ts';
import type { SettingsContext } from './context.ts';
import { invalid } from './errors.ts';
import { DEFAULT_OVERLAP_MS, lockWebhook, MAX_OVERLAP_MS } from './webhooks.ts';

function checkOverlap(overlapMs: number): number {
  if (!Number.isFinite(overlapMs) || overlapMs < 0 || overlapMs > MAX_OVERLAP_MS) {
    throw invalid('the overlap is from 0 to 7 days.');
  }
  return overlapMs;
}

/**
 * ed25519 signatures, per webhook, opt-in (D11): switched on, every delivery's `webhook-signature`
 * also carries a `v1a` signature that the webhook's public key (`whpk_…`) verifies. The private key
 * is made here and stored sealed at once; no action answers it, nor does any view or audit entry.
 */
export function webhookSigningActions({ inTransaction }: SettingsContext) {
  return {
    /** Switches ed25519 on with a new key pair; on already, it answers the key signing now. */
    async enableEd25519(actor: Actor, id: string) {
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const [current] = (await listSigningKeys(trx, [id])).get(id)!;
        if (current) return { webhook_id: id, public_key: current.public_key };
        const pair = generateSigningKeyPair();
        await addSigningKeyIn(trx, id, pair, 0);
        await audit(trx, who, webhook.agency_id, 'webhook.asymmetric_signing_enabled', 'webhook', id, {
          public_key: pair.publicKey,
        });
        return { webhook_id: id, public_key: pair.publicKey };
      });
    },

    /**
     * A new key pair; the keys signing before keep signing for `overlapMs` (default 24 hours, at
     * most 7 days; 0 ends them now), so a receiver can take the new public key without losing a
     * delivery, as for a secret.
     */
    async rotateSigningKey(actor: Actor, id: string, input: { overlapMs?: number } = {}) {
      const overlapMs = checkOverlap(input.overlapMs ?? DEFAULT_OVERLAP_MS);
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        if ((await listSigningKeys(trx, [id])).get(id)!.length === 0) {
          throw invalid(`webhook ${id} does not sign with ed25519; switch ed25519 on first.`);
        }
        const pair = generateSigningKeyPair();
        const { previousExpireAt } = await addSigningKeyIn(trx, id, pair, overlapMs);
        await audit(trx, who, webhook.agency_id, 'webhook.signing_key_rotated', 'webhook', id, {
          public_key: pair.publicKey,
          overlap_seconds: Math.round(overlapMs / 1000),
          previous_keys_expire_at: previousExpireAt!.toISOString(),
        });
        return { webhook_id: id, public_key: pair.publicKey, previous_keys_expire_at: previousExpireAt! };
      });
    },

    /** Switches ed25519 off: no `v1a` from the next attempt on. Off already, nothing changes. */
    async disableEd25519(actor: Actor, id: string) {
      return inTransaction(async (trx) => {
        const { webhook, who } = await lockWebhook(trx, actor, id);
        const ended = await endSigningKeysIn(trx, id);
        if (ended > 0)
          await audit(trx, who, webhook.agency_id, 'webhook.asymmetric_signing_disabled', 'webhook', id);
        return { webhook_id: id, ed25519: false as const };
      });
    },
  };
}
