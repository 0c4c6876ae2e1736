import type { Migration, MigrationProvider } from 'kysely/migration';
import * as accounts from './0001_accounts.ts';
import * as writeContract from './0002_write_contract.ts';
import * as eventCapture from './0003_event_capture.ts';
import * as rateLimitBuckets from './0004_rate_limit_buckets.ts';
import * as webhooks from './0005_webhooks.ts';
import * as ownerActions from './0006_owner_actions.ts';
import * as ownerSessions from './0007_owner_sessions.ts';
import * as templateFlipTouches from './0008_template_flip_touches.ts';
import * as templatePartsSides from './0009_template_parts_sides.ts';
import * as objectIdPrefixes from './0010_object_id_prefixes.ts';
import * as updatedAtAtWrite from './0011_updated_at_at_write.ts';
import * as noticeLeases from './0012_notice_leases.ts';
import * as platformSecrets from './0013_platform_secrets.ts';
import * as outboxFairClaim from './0014_outbox_fair_claim.ts';
import * as fairDelivery from './0015_fair_delivery.ts';
import * as deliveryTargetChanges from './0016_delivery_target_changes.ts';
import * as recordEventsFunction from './0017_record_events.ts';
import * as attemptDetails from './0018_attempt_details.ts';
import * as shownOnce from './0019_shown_once.ts';
import * as captureTimes from './0020_capture_times.ts';
import * as receiverPace from './0021_receiver_pace.ts';
import * as webhookSigningKeys from './0022_webhook_signing_keys.ts';

/**
 * Every migration in strict order. A static list rather than a folder scan: it works the same
 * from source, from a bundle and under jest, and a missing import is a type error, not a skip.
 */
export const migrations: Record<string, Migration> = {
  '0001_accounts': accounts,
  '0002_write_contract': writeContract,
  '0003_event_capture': eventCapture,
  '0004_rate_limit_buckets': rateLimitBuckets,
  '0005_webhooks': webhooks,
  '0006_owner_actions': ownerActions,
  '0007_owner_sessions': ownerSessions,
  '0008_template_flip_touches': templateFlipTouches,
  '0009_template_parts_sides': templatePartsSides,
  '0010_object_id_prefixes': objectIdPrefixes,
  '0011_updated_at_at_write': updatedAtAtWrite,
  '0012_notice_leases': noticeLeases,
  '0013_platform_secrets': platformSecrets,
  '0014_outbox_fair_claim': outboxFairClaim,
  '0015_fair_delivery': fairDelivery,
  '0016_delivery_target_changes': deliveryTargetChanges,
  '0017_record_events': recordEventsFunction,
  '0018_attempt_details': attemptDetails,
  '0019_shown_once': shownOnce,
  '0020_capture_times': captureTimes,
  '0021_receiver_pace': receiverPace,
  '0022_webhook_signing_keys': webhookSigningKeys,
};

export const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };
