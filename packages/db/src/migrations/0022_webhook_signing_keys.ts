import { sql, type Kysely } from 'kysely';

// ed25519 signatures, per webhook, opt-in (D11, issue 42).
//
// `webhook_signing_keys`: a webhook's key pairs, rotated as its secrets are (a new key, the older
// ones signing on until `expires_at`); none while the owner has not switched ed25519 on. The public
// key is public (`whpk_` and its 32 bytes in standard base64). The private key (PKCS #8) is sealed
// with AES-256-GCM under the platform secret `webhook_signing_key_seal`, made here as 0013 made
// the cursor key, with the webhook's id as associated data: a copy of this table, a row in a log
// or a query's answer reveals no private key, nor can a sealed key be moved to another webhook.
// Only the dispatcher opens them, to sign (packages/db/src/repositories/webhook-signing-keys.ts).
//
// Dispatchers read the keys with the webhook, so a change of them is told as a change of its
// secrets is (migration 0016): the same trigger function, which reads only `webhook_id`. Frozen.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE webhook_signing_keys (
      id bigserial PRIMARY KEY,
      webhook_id text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      public_key text NOT NULL CHECK (public_key ~ '^whpk_[A-Za-z0-9+/]{43}=$'),
      -- iv.ciphertext.tag, base64url.
      private_key_sealed text NOT NULL CHECK (octet_length(private_key_sealed) <= 256),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz
    );
    CREATE INDEX webhook_signing_keys_webhook ON webhook_signing_keys (webhook_id);

    INSERT INTO platform_secrets (name, secret)
    VALUES ('webhook_signing_key_seal',
            decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

    CREATE TRIGGER webhook_signing_keys_delivery_targets_changed
      AFTER INSERT OR UPDATE OR DELETE ON webhook_signing_keys
      FOR EACH ROW EXECUTE FUNCTION webhook_secrets_delivery_targets_changed();
    CREATE TRIGGER webhook_signing_keys_delivery_targets_truncated AFTER TRUNCATE ON webhook_signing_keys
      FOR EACH STATEMENT EXECUTE FUNCTION delivery_targets_truncated();
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DROP TABLE webhook_signing_keys;
    DELETE FROM platform_secrets WHERE name = 'webhook_signing_key_seal';
  `.execute(db);
}
