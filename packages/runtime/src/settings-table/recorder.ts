import type { Setting } from './row.ts';

/** The recorder's own settings (docs/events.md): grouping, batches, partitions. */
export const recorderSettings = {
  EVENT_GROUP_QUIET: {
    kind: 'duration',
    default: '1m',
    readers: ['recorder'],
    meaning: 'A `*.updated` event waits until its object has had no change for this long (spec 6.1).',
  },
  EVENT_GROUP_MAX: {
    kind: 'duration',
    default: '5m',
    readers: ['recorder'],
    meaning:
      "A `*.updated` event waits at most this long after its group's first change; not shorter than `EVENT_GROUP_QUIET`.",
  },
  RECORDER_BATCH_SIZE: {
    kind: 'int',
    default: 250,
    min: 1,
    max: 10_000,
    readers: ['recorder'],
    meaning:
      "Outbox rows per batch transaction: larger batches spread a commit's cost, smaller ones keep another agency's change from waiting long behind a bulk import.",
  },
  RECORDER_POLL_INTERVAL: {
    kind: 'duration',
    default: '20ms',
    readers: ['recorder'],
    meaning: 'How often an idle recorder looks for work, and its pause after a batch that was not full.',
  },
  RECORDER_PUBLISH_TIMEOUT: {
    kind: 'duration',
    default: '10s',
    readers: ['recorder'],
    meaning:
      'A publish batch RabbitMQ has not confirmed within this is published again (the same event ids), on a new channel if the connection lives.',
  },
  RECORDER_MAINTENANCE_INTERVAL: {
    kind: 'duration',
    default: '1h',
    readers: ['recorder'],
    meaning: "How often the events table's day partitions are created ahead and expired ones dropped.",
  },
  RECORDER_HEALTH_PORT: {
    kind: 'int',
    default: 3001,
    min: 0,
    max: 65_535,
    readers: ['recorder'],
    meaning: '`/healthz` (alive) and `/readyz` (Postgres answers); 0 picks a free port.',
  },
  RECORDER_STOP_TIMEOUT: {
    kind: 'duration',
    default: '20s',
    readers: ['recorder'],
    meaning: 'On SIGTERM, the current batch finishes; past this the process exits anyway.',
  },
} as const satisfies Record<string, Setting>;
