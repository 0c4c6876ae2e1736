import type { Kysely } from 'kysely';
import type { Ed25519Signer } from '@trips/contracts/webhook-signing';
import type { Database } from '@trips/db';
import { openSigningKey, signingKeySealKey } from '@trips/db/webhook-signing-keys';
import type { DeliveryTargetRead } from '@trips/db/webhooks';
import { sodiumEd25519Signer } from './sodium-signer.ts';
import type { TargetRead } from './targets-cache.ts';

/**
 * Opens the sealed ed25519 keys of the webhooks as they are read (D11), so a target in the cache
 * is ready to sign: each key is made its libsodium signer (sodium-signer.ts) once, here. The
 * sealing key is read from Postgres once, when a first webhook has keys; a read that fails is
 * tried again with the next. A key that does not open (the platform's sealing key replaced, a row
 * copied from another database) is left out and told to `unopenable`: that webhook's deliveries go
 * without its `v1a`, which its receiver refuses, rather than every delivery of the agency failing
 * with it.
 */
export class SigningKeyOpener {
  private readonly db: Kysely<Database>;
  private readonly unopenable: (webhookId: string) => void;
  private sealKey: Promise<Buffer> | undefined;

  constructor(db: Kysely<Database>, unopenable: (webhookId: string) => void) {
    this.db = db;
    this.unopenable = unopenable;
  }

  async open(row: DeliveryTargetRead): Promise<TargetRead> {
    if (row.signing_keys.length === 0) return { ...row, signing_keys: [] };
    const sealKey = await (this.sealKey ??= signingKeySealKey(this.db).catch((error: unknown) => {
      this.sealKey = undefined;
      throw error;
    }));
    const keys: Ed25519Signer[] = [];
    const ends: (number | null)[] = [];
    row.signing_keys.forEach((sealed, i) => {
      try {
        keys.push(sodiumEd25519Signer(openSigningKey(sealed, sealKey, row.id)));
        ends.push(row.signing_keys_expire_in_ms[i] ?? null);
      } catch {
        this.unopenable(row.id);
      }
    });
    return { ...row, signing_keys: keys, signing_keys_expire_in_ms: ends };
  }

  openAll(rows: DeliveryTargetRead[]): Promise<TargetRead[]> {
    return Promise.all(rows.map((row) => this.open(row)));
  }
}
