import type { Setting } from './row.ts';

/** pino's levels, and `silent`. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Read by more than one process: each must agree with the others (decisions.md D9 names most). */
export const sharedSettings = {
  DATABASE_URL: {
    kind: 'url',
    protocols: ['postgres:', 'postgresql:'],
    default: 'postgres://localhost:5432/trips',
    secret: true,
    readers: ['api', 'recorder', 'dispatcher', 'tripctl'],
    meaning: 'Postgres; tripctl takes no default and says so when it is not set.',
  },
  LOG_LEVEL: {
    kind: 'choice',
    choices: LOG_LEVELS,
    default: 'info',
    readers: ['api', 'recorder', 'dispatcher', 'tripctl'],
    meaning:
      'The least severe log lines written, to stdout in 4 KiB blocks at most 0.2 s late, all flushed on exit (short of SIGKILL).',
  },
  AMQP_URL: {
    kind: 'urls',
    protocols: ['amqp:', 'amqps:'],
    default: 'amqp://guest:guest@localhost:5672',
    secret: true,
    readers: ['api', 'recorder', 'dispatcher', 'tripctl'],
    meaning:
      "RabbitMQ: one URL, or every node of a cluster comma-separated, tried in turn; the API and tripctl use it for owners' test events and redeliveries.",
  },
  AMQP_PREFIX: {
    kind: 'text',
    default: '',
    readers: ['api', 'recorder', 'dispatcher', 'tripctl'],
    meaning: 'Prepended to every exchange and queue name; the same on every process of a deployment.',
  },
  EVENT_RETENTION: {
    kind: 'duration',
    default: '30d',
    readers: ['api', 'recorder', 'dispatcher', 'tripctl'],
    meaning:
      'The `GET /events` window: event partitions and the attempts log are kept this long, and tripctl redelivers no older event.',
  },
  QUEUE_VACUUM_INTERVAL: {
    kind: 'duration',
    default: '10s',
    readers: ['recorder', 'dispatcher'],
    meaning:
      'How often each service vacuums the Postgres tables it drains as queues (the recorder `outbox` and `events_unpublished`, the dispatcher `held_deliveries`), whatever autovacuum does.',
  },
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: {
    kind: 'bool',
    default: false,
    readers: ['api', 'dispatcher', 'tripctl'],
    meaning: 'Development and tests only: webhook URLs on loopback and private addresses are accepted (D7).',
  },
} as const satisfies Record<string, Setting>;
