import type { Setting } from './row.ts';

/** The API's own settings: the read API, its rate limits and the owners' settings page. */
export const apiSettings = {
  PORT: {
    kind: 'int',
    default: 3000,
    min: 0,
    max: 65_535,
    readers: ['api', 'tripctl'],
    meaning:
      "The API's port, where `/healthz` and `/readyz` answer too; tripctl's demo commands write it into their curl line.",
  },
  API_METRICS_PORT: {
    kind: 'int',
    default: 3003,
    min: 0,
    max: 65_535,
    readers: ['api'],
    meaning: '`GET /metrics` for Prometheus, on a port of its own that is never routed from outside.',
  },
  API_DB_POOL_SIZE: {
    kind: 'int',
    default: 10,
    min: 1,
    max: 200,
    readers: ['api'],
    meaning: "Postgres connections per replica: size `max_connections` for the replicas' sum and the rest.",
  },
  RATE_LIMIT_PER_SECOND: {
    kind: 'int',
    default: 50,
    min: 1,
    readers: ['api'],
    meaning: 'Requests per second a key may make: the rate its bucket refills (D3).',
  },
  RATE_LIMIT_BURST: {
    kind: 'int',
    default: 100,
    min: 1,
    readers: ['api'],
    meaning: "Requests a key may make at once: its bucket's size.",
  },
  RATE_LIMIT_STORE: {
    kind: 'choice',
    choices: ['redis', 'postgres'],
    default: 'redis',
    readers: ['api'],
    meaning:
      'Where the buckets every replica shares live; `postgres` (an unlogged table) serves a deployment without Redis.',
  },
  REDIS_URL: {
    kind: 'url',
    protocols: ['redis:', 'rediss:'],
    default: 'redis://127.0.0.1:6379',
    secret: true,
    readers: ['api'],
    meaning: 'The Redis of the rate-limit buckets.',
  },
  API_KEY_CACHE_TTL: {
    kind: 'duration',
    default: '60s',
    readers: ['api'],
    meaning: 'How long a replica trusts a key it has cached; a change to the key evicts it at once (LISTEN).',
  },
  API_SHUTDOWN_DEADLINE: {
    kind: 'duration',
    default: '20s',
    readers: ['api'],
    meaning: 'On SIGTERM, requests in flight finish; past this the process exits anyway.',
  },
  API_TRUST_PROXY: {
    kind: 'text',
    default: '',
    defaultText: 'empty: no proxy is trusted',
    readers: ['api'],
    meaning:
      'The proxies whose `X-Forwarded-For` and `-Proto` are believed (Express\' "trust proxy"): addresses, CIDR ranges, `loopback`, `linklocal` or `uniquelocal`, comma-separated.',
  },
  NODE_ENV: {
    kind: 'text',
    default: 'development',
    readers: ['api'],
    meaning:
      "Anything but `production` lets the settings page's refusal of a private webhook URL name `WEBHOOK_ALLOW_PRIVATE_NETWORKS`.",
  },
  SETTINGS_SESSION_TTL: {
    kind: 'duration',
    default: '12h',
    readers: ['api'],
    meaning: "How long a session of the owners' settings page lasts.",
  },
  SETTINGS_SIGN_IN_FAILURES_PER_EMAIL: {
    kind: 'int',
    default: 5,
    min: 1,
    readers: ['api'],
    meaning:
      'Failed sign-ins per e-mail address in a window before the next is answered 429 (docs/settings.md).',
  },
  SETTINGS_SIGN_IN_FAILURES_PER_ADDRESS: {
    kind: 'int',
    default: 50,
    min: 1,
    readers: ['api'],
    meaning: 'Failed sign-ins per client address in a window before the next is answered 429.',
  },
  SETTINGS_SIGN_IN_WINDOW: {
    kind: 'duration',
    default: '15m',
    readers: ['api'],
    meaning: 'The window the sign-in limits count in.',
  },
} as const satisfies Record<string, Setting>;
