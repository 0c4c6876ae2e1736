import { settingsContext, type SettingsOptions } from './context.ts';
import { deliveryLogActions } from './delivery-log.ts';
import { keyActions } from './keys.ts';
import { peopleActions } from './people.ts';
import { webhookDeliveryActions } from './webhook-deliveries.ts';
import { webhookSigningActions } from './webhook-signing.ts';
import { webhookActions } from './webhooks.ts';

export { PLATFORM, type Actor } from './access.ts';
export type { SettingsOptions } from './context.ts';
export type { ApiKeyView } from './keys.ts';
export type { LogEntry, LogPage, NextAttempt, WebhookHealth, HealthBucket } from './delivery-log.ts';
export type { RedeliveryProgress } from './webhook-deliveries.ts';
export type { PublicKeyView } from '@trips/db/webhook-signing-keys';
export { DEFAULT_OVERLAP_MS, MAX_OVERLAP_MS, webhookView, type WebhookView } from './webhooks.ts';

/**
 * The owner-only management module (issue 5): every change checked, validated and audited in one
 * transaction. Test events and redelivery change nothing in the database and run in none (see
 * sendTestEvent): they are audited once RabbitMQ has confirmed them.
 *
 * Each area is its own module on one shared context: API keys (keys.ts), webhooks (webhooks.ts),
 * their test events and redelivery (webhook-deliveries.ts), their delivery log (delivery-log.ts) and
 * people (people.ts).
 */
export function createSettings(options: SettingsOptions) {
  const ctx = settingsContext(options);
  return {
    // ---- API keys (D2) ----
    ...keyActions(ctx),
    // ---- Webhooks (D7) ----
    ...webhookActions(ctx),
    ...webhookSigningActions(ctx),
    ...webhookDeliveryActions(ctx),
    ...deliveryLogActions(ctx),
    // ---- People ----
    ...peopleActions(ctx),
  };
}

export type Settings = ReturnType<typeof createSettings>;
