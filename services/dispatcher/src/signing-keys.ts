import type { Kysely } from 'kysely';
import { signingPrivateKey } from '@trips/contracts/webhook-signing';
import type { Database } from '@trips/db';
import { openSigningKey, signingKeySealKey } from '@trips/db/webhook-signing-keys';
import type { DeliveryTargetRead } from '@trips/db/webhooks';
import type { TargetRead } from './targets-cache.ts';

function opened(sealed: string, sealKey: Buffer, webhookId: string) {
  try {
    return signingPrivateKey(openSigningKey(sealed, sealKey, webhookId));
  } catch {
    // The cause (OpenSSL's "unable to authenticate data") says nothing an operator can act on.
    throw new Error(
      `webhook ${webhookId}: an ed25519 key does not open with the platform's sealing key (platform_secrets webhook_signing_key_seal)`,
    );
  }
}

/**
 * Opens the sealed ed25519 keys of the webhooks as they are read (D11), so a target in the cache
 * is ready to sign. The sealing key is read from Postgres once, when a first webhook has keys; a
 * read that fails is tried again with the next.
 */
export class SigningKeyOpener {
  private readonly db: Kysely<Database>;
  private sealKey: Promise<Buffer> | undefined;

  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  async open(row: DeliveryTargetRead): Promise<TargetRead> {
    if (row.signing_keys.length === 0) return { ...row, signing_keys: [] };
    const sealKey = await (this.sealKey ??= signingKeySealKey(this.db).catch((error: unknown) => {
      this.sealKey = undefined;
      throw error;
    }));
    return { ...row, signing_keys: row.signing_keys.map((sealed) => opened(sealed, sealKey, row.id)) };
  }

  openAll(rows: DeliveryTargetRead[]): Promise<TargetRead[]> {
    return Promise.all(rows.map((row) => this.open(row)));
  }
}
