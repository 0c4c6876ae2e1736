import type { ColumnType, Generated, Selectable } from 'kysely';

/** Columns the database fills in: optional on insert, never written by our code. */
type DbDefault<T> = ColumnType<T, T | undefined, T>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** `date` columns come back as 'YYYY-MM-DD' strings (see db.ts), never as shifted JS Dates. */
type DateOnly = ColumnType<string, string, string>;

export type SubscriptionStatus = 'trialing' | 'active' | 'expired';
export type UserRole = 'owner' | 'planner';

export interface AgenciesTable {
  id: DbDefault<string>;
  name: string;
  api_enabled: Generated<boolean>;
  subscription_status: Generated<SubscriptionStatus>;
  trial_ends_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface UsersTable {
  id: DbDefault<string>;
  agency_id: string;
  email: string;
  role: UserRole;
  password_hash: string | null;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: DbDefault<string>;
  agency_id: string;
  name: string | null;
  prefix: string;
  hash: Buffer;
  scopes: string[];
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface TripsTable {
  id: DbDefault<string>;
  agency_id: string;
  is_template: Generated<boolean>;
  title: string;
  status: Generated<string>;
  region: string | null;
  base_camp: string | null;
  start_date: DateOnly | null;
  end_date: DateOnly | null;
  num_days: number;
  golfers: Generated<number>;
  client_page_published: Generated<boolean>;
  client_page_url: string | null;
  client_page_headline: string | null;
  client_page_message: string | null;
  accepted_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ItinerariesTable {
  id: DbDefault<string>;
  trip_id: string;
  non_golfers: Generated<number>;
  summary: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TripOptionsTable {
  id: DbDefault<string>;
  trip_id: string;
  name: string;
  description: string | null;
  price_amount: number | null;
  position: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PaymentsTable {
  id: DbDefault<string>;
  agency_id: string;
  trip_id: string;
  description: string;
  amount: number;
  currency: string;
  due_date: DateOnly | null;
  visibility: Generated<'draft' | 'shown'>;
  amount_paid: Generated<number>;
  paid_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ContactsTable {
  id: DbDefault<string>;
  agency_id: string;
  first_name: string;
  last_name: string;
  email: string | null;
  phone: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TripContactsTable {
  agency_id: string;
  trip_id: string;
  contact_id: string;
  created_at: Timestamp;
}

export interface Database {
  agencies: AgenciesTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  trips: TripsTable;
  itineraries: ItinerariesTable;
  trip_options: TripOptionsTable;
  payments: PaymentsTable;
  contacts: ContactsTable;
  trip_contacts: TripContactsTable;
  outbox: OutboxTable;
  events: EventsTable;
  events_unpublished: EventsUnpublishedTable;
  event_groups: EventGroupsTable;
  webhooks: WebhooksTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_signing_keys: WebhookSigningKeysTable;
  webhook_attempts: WebhookAttemptsTable;
  owner_notices: OwnerNoticesTable;
  audit_log: AuditLogTable;
  owner_sessions: OwnerSessionsTable;
  shown_once: ShownOnceTable;
  sign_in_failures: SignInFailuresTable;
  platform_secrets: PlatformSecretsTable;
  held_deliveries: HeldDeliveriesTable;
  webhook_pace: WebhookPaceTable;
}

export type Agency = Selectable<AgenciesTable>;

export type OutboxSource =
  'trips' | 'itineraries' | 'trip_options' | 'payments' | 'contacts' | 'trip_contacts';
export type OutboxOp = 'insert' | 'update' | 'delete';
export type EventObjectType = 'trip' | 'payment' | 'contact';

/** Changes captured by triggers in the writer's transaction (migration 0003). */
export interface OutboxTable {
  id: Generated<number>;
  agency_id: string;
  source: OutboxSource;
  op: OutboxOp;
  old: Record<string, unknown> | null;
  new: Record<string, unknown> | null;
  created_at: Timestamp;
}

/** The event record, partitioned by day on created_at; seq is the GET /events reading order. */
export interface EventsTable {
  seq: number;
  id: DbDefault<string>;
  agency_id: string;
  type: string;
  object_type: EventObjectType;
  object_id: string;
  data: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
}

/** Recorded events the broker has not confirmed yet. */
export interface EventsUnpublishedTable {
  seq: number;
  id: string;
  agency_id: string;
  type: string;
  object_type: EventObjectType;
  object_id: string;
  data: ColumnType<Record<string, unknown>, string, string>;
  created_at: Timestamp;
  /** When its change was captured (a group's first change); null when not known (migration 0020). */
  captured_at: Timestamp | null;
}

/** Pending *.updated events, one per object. */
export interface EventGroupsTable {
  object_type: EventObjectType;
  object_id: string;
  agency_id: string;
  first_change_at: Timestamp;
  last_change_at: Timestamp;
  due_at: Timestamp;
}

export type OutboxRow = Selectable<OutboxTable>;

export type WebhookDisabledReason = 'failing' | 'owner';

/** An agency's webhook endpoint with its delivery state (migration 0005). */
export interface WebhooksTable {
  id: DbDefault<string>;
  agency_id: string;
  url: string;
  event_types: string[];
  description: string | null;
  disabled_at: Timestamp | null;
  disabled_reason: WebhookDisabledReason | null;
  failing_since: Timestamp | null;
  last_failure_at: Timestamp | null;
  last_error: string | null;
  last_success_at: Timestamp | null;
  warned_at: Timestamp | null;
  epoch: Generated<number>;
  /** The owner's rate limit: at most this many deliveries a second, by all dispatchers together (migration 0021). */
  rate_limit: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookSecretsTable {
  id: DbDefault<string>;
  webhook_id: string;
  secret: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
}

/** A webhook's ed25519 key pairs (migration 0022): the private key sealed, never shown. */
export interface WebhookSigningKeysTable {
  id: Generated<number>;
  webhook_id: string;
  /** `whpk_` and the 32 raw bytes in standard base64. */
  public_key: string;
  /** The PKCS #8 private key under AES-256-GCM (repositories/webhook-signing-keys.ts). */
  private_key_sealed: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  attempted_at: Timestamp;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
  succeeded: boolean;
  /** The Service-Signature sent (migration 0018); the secret itself never. */
  request_signature: string | null;
  /** The body sent, only for an event in no record (a test event); others rebuild it from events. */
  request_body: string | null;
  /** The answer's headers as `name: value` lines, cut at 1 KiB. */
  response_headers: string | null;
  /** Node's error code of a failure without an answer, e.g. CERT_HAS_EXPIRED. */
  error_detail: string | null;
  /** When the delivery is due again, as the dispatcher scheduled it; null: none is (migration 0021). */
  next_attempt_at: Timestamp | null;
}

/** A webhook's pace, shared by every dispatcher (migration 0021, repositories/webhook-pace.ts). */
export interface WebhookPaceTable {
  webhook_id: string;
  /** The receiver answered 429 or 503: nothing is attempted before then. */
  paused_until: Timestamp | null;
  /** When that pause began (the answer's time, as Postgres wrote it). */
  paused_at: Timestamp | null;
  /** The status of the answer that paused it. */
  pause_status: number | null;
  /** The Retry-After that answer gave, in ms; null: it gave none (or one that did not parse). */
  pause_retry_after_ms: number | null;
  /** The owner's rate limit: the first send time not yet reserved by a dispatcher. */
  next_send_at: Timestamp | null;
}

export type WebhookPaceRow = Selectable<WebhookPaceTable>;

export type OwnerNoticeKind = 'webhook_failing' | 'webhook_switched_off';

/** A delivery waiting in its webhook's lane for room (migration 0015, repositories/held-deliveries.ts). */
export interface HeldDeliveriesTable {
  id: Generated<number>;
  webhook_id: string;
  /** The DeliveryMessage, as the dispatcher's queues carry it. */
  delivery: unknown;
  /** Not to be attempted before then; null: as soon as its webhook has room. */
  not_before: Timestamp | null;
  /** While in the future, one dispatcher is attempting it. */
  claimed_until: Timestamp | null;
  /** When its event's change was captured, for the lag metrics; null when not known (migration 0020). */
  captured_at: Timestamp | null;
}

export interface OwnerNoticesTable {
  id: Generated<number>;
  agency_id: string;
  webhook_id: string | null;
  kind: OwnerNoticeKind;
  recipient: string;
  subject: string;
  body: string;
  created_at: Timestamp;
  sent_at: Timestamp | null;
  send_attempts: Generated<number>;
  last_error: string | null;
  /** While in the future, one mailer is sending this notice (migration 0012). */
  claimed_until: Timestamp | null;
}

export type WebhookRow = Selectable<WebhooksTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type OwnerNoticeRow = Selectable<OwnerNoticesTable>;

export type AuditObjectType = 'api_key' | 'webhook' | 'user';

/** One owner action (migration 0006): who did what to which object, when, with a small summary. */
export interface AuditLogTable {
  id: Generated<number>;
  agency_id: string;
  actor_user_id: string | null;
  actor: string;
  action: string;
  object_type: AuditObjectType;
  object_id: string;
  details: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
}

export type AuditLogRow = Selectable<AuditLogTable>;

export interface OwnerSessionsTable {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: Timestamp;
  expires_at: Date;
}

/** A key or secret waiting, sealed, for the one page that shows it (migration 0019). */
export interface ShownOnceTable {
  id: string;
  session_token_hash: string;
  about: unknown;
  sealed: string;
  created_at: Timestamp;
}

export interface SignInFailuresTable {
  key: string;
  failures: number;
  window_started_at: Date;
}

/** The platform's own secrets (migration 0013), e.g. the key that seals GET /events cursors. */
export interface PlatformSecretsTable {
  name: string;
  secret: Buffer;
  created_at: Generated<Timestamp>;
}
