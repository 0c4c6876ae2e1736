export { createSettings, PLATFORM, DEFAULT_OVERLAP_MS, MAX_OVERLAP_MS, webhookView } from './settings.ts';
export type {
  Actor,
  Settings,
  SettingsOptions,
  ApiKeyView,
  WebhookView,
  RedeliveryProgress,
  PublicKeyView,
  LogEntry,
  LogPage,
  NextAttempt,
  WebhookHealth,
  HealthBucket,
} from './settings.ts';
export { describeAttempt } from './attempt-words.ts';
export { describeRateLimit } from './pace-words.ts';
export { SettingsError, type SettingsErrorCode } from './errors.ts';
export {
  checkWebhookUrl,
  checkEventTypes,
  checkScopes,
  checkDescription,
  parseRateLimit,
  MAX_URL_LENGTH,
  MAX_DESCRIPTION_LENGTH,
  MIN_RATE_LIMIT,
  MAX_RATE_LIMIT,
} from './validate.ts';
export { hashPassword, verifyPassword, MIN_PASSWORD_LENGTH } from './passwords.ts';
