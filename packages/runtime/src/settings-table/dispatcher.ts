import type { Setting } from './row.ts';

const DISPATCHER = ['dispatcher'] as const;

/** The dispatcher's settings (docs/webhooks.md): every timing rule of spec 6 is one of them. */
export const dispatcherSettings = {
  SMTP_URL: {
    kind: 'url',
    protocols: ['smtp:', 'smtps:'],
    defaultText: 'none: e-mails are only logged',
    secret: true,
    readers: DISPATCHER,
    meaning: "The mail server owners' e-mails go out through; required in production.",
  },
  MAIL_FROM: {
    kind: 'text',
    default: 'Trip Service <webhooks@trips.invalid>',
    readers: DISPATCHER,
    meaning: "The sender of owners' e-mails: an address your mail server may send from.",
  },
  SETTINGS_URL: {
    kind: 'text',
    default: 'http://localhost:3000/settings',
    readers: DISPATCHER,
    meaning: "The settings page the owners' e-mails link to.",
  },
  WEBHOOK_RETRY_DELAYS: {
    kind: 'durations',
    default: '1m,5m,30m,2h,6h,24h',
    readers: DISPATCHER,
    meaning: 'The waits after each failed attempt, in turn; the last one repeats (spec 6.3).',
  },
  WEBHOOK_FAILURE_WINDOW: {
    kind: 'duration',
    default: '3d',
    readers: DISPATCHER,
    meaning:
      'Retries stop this long after a delivery first failed, and a webhook with no 2xx for this long is switched off (spec 3.3).',
  },
  WEBHOOK_TIMEOUT: {
    kind: 'duration',
    default: '10s',
    readers: DISPATCHER,
    meaning: 'The whole answer to a delivery must arrive within this (spec 4.4).',
  },
  WEBHOOK_CA_FILE: {
    kind: 'text',
    readers: DISPATCHER,
    meaning: "A CA certificate file to trust besides the system's (a local HTTPS receiver in tests).",
  },
  DISPATCHER_PREFETCH: {
    kind: 'int',
    default: 100,
    min: 1,
    max: 10_000,
    readers: DISPATCHER,
    meaning: 'Events in flight per dispatcher, and as many retries: it bounds memory and sockets.',
  },
  DISPATCHER_ENDPOINT_CONCURRENCY: {
    kind: 'int',
    default: 20,
    min: 1,
    max: 1_000,
    readers: DISPATCHER,
    meaning:
      "Attempts in flight to one webhook from one dispatcher; more wait briefly in memory, then in the webhook's lane.",
  },
  DISPATCHER_INLINE_WAIT: {
    kind: 'duration',
    default: '250ms',
    allowZero: true,
    readers: DISPATCHER,
    meaning:
      "The longest a delivery waits in memory for a slot of a busy, healthy webhook before it goes to the webhook's lane; `0ms` sends it straight there.",
  },
  DISPATCHER_LANE_PAUSE_MAX: {
    kind: 'duration',
    default: '60s',
    readers: DISPATCHER,
    meaning:
      "A receiver's pause (429, 503) up to this long keeps the refused delivery in its lane, due when the pause ends; a longer one is a failure on the retry schedule.",
  },
  DISPATCHER_PAUSE_BACKOFF: {
    kind: 'duration',
    default: '1s',
    readers: DISPATCHER,
    meaning:
      'The pause after a 429 or 503 without a usable `Retry-After`, doubled with each such answer in a row, up to 30 times this.',
  },
  DISPATCHER_LANE_MAX_IN_FLIGHT: {
    kind: 'int',
    default: 500,
    min: 1,
    max: 100_000,
    readers: DISPATCHER,
    meaning: 'Lane attempts in flight per dispatcher, over every webhook; beyond it the lanes take turns.',
  },
  DISPATCHER_LANE_SCAN_INTERVAL: {
    kind: 'duration',
    default: '1s',
    readers: DISPATCHER,
    meaning: 'How often a dispatcher looks for lanes other dispatchers filled, or claims that expired.',
  },
  DISPATCHER_BREAKER_COOLDOWN: {
    kind: 'duration',
    default: '30s',
    defaultText: '`30s`, or a quarter of `WEBHOOK_FAILURE_WINDOW` if shorter',
    readers: DISPATCHER,
    meaning:
      "How long a webhook's circuit breaker stays open before one trial attempt; shorter than `WEBHOOK_FAILURE_WINDOW`.",
  },
  DISPATCHER_BREAKER_ERROR_PERCENT: {
    kind: 'int',
    default: 50,
    min: 1,
    max: 99,
    readers: DISPATCHER,
    meaning: "A webhook's breaker opens when more than this share of its recent attempts failed.",
  },
  DISPATCHER_BREAKER_VOLUME: {
    kind: 'int',
    default: 10,
    min: 1,
    max: 10_000,
    readers: DISPATCHER,
    meaning: 'The breaker opens only once at least this many attempts were made within its window.',
  },
  DISPATCHER_BREAKER_WINDOW: {
    kind: 'duration',
    default: '1m',
    readers: DISPATCHER,
    meaning: "The breaker's window of recent attempts, at least `1s`.",
  },
  DISPATCHER_WEBHOOK_CACHE_TTL: {
    kind: 'duration',
    default: '30s',
    allowZero: true,
    readers: DISPATCHER,
    meaning:
      'How long a dispatcher keeps a webhook it has not heard change (changes evict at once, LISTEN); `0s`: no cache and no LISTEN connection.',
  },
  DISPATCHER_CONSUMER_IDLE_REOPEN: {
    kind: 'duration',
    default: '1m',
    allowZero: true,
    readers: DISPATCHER,
    meaning:
      'No delivery for this long and none held: the consumer takes a new channel, which returns what a quorum queue stranded on the old one; `0s`: never.',
  },
  DISPATCHER_HEALTH_PORT: {
    kind: 'int',
    default: 3002,
    min: 0,
    max: 65_535,
    readers: DISPATCHER,
    meaning: '`/healthz` (alive) and `/readyz` (Postgres and RabbitMQ answer); 0 picks a free port.',
  },
  DISPATCHER_STOP_TIMEOUT: {
    kind: 'duration',
    default: '20s',
    readers: DISPATCHER,
    meaning:
      'On SIGTERM, attempts in flight finish, and past this the process exits anyway; it must exceed `WEBHOOK_TIMEOUT`.',
  },
} as const satisfies Record<string, Setting>;
