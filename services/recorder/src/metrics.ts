import { sql, type Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { Counter, Gauge, type Registry } from '@trips/runtime';

/** The recorder's Prometheus metrics (docs/operations.md says what to alert on). */
export function recorderMetrics(registry: Registry, db: Kysely<Database>) {
  const registers = [registry];
  return {
    captured: new Counter({
      name: 'trips_changes_captured_total',
      help: 'Captured changes (outbox rows) the recorder has processed.',
      registers,
    }),
    recorded: new Counter({
      name: 'trips_events_recorded_total',
      help: 'Events recorded, by type.',
      labelNames: ['type'] as const,
      registers,
    }),
    published: new Counter({
      name: 'trips_events_published_total',
      help: 'Recorded events confirmed by RabbitMQ.',
      registers,
    }),
    lag: new Gauge({
      name: 'trips_recorder_lag_seconds',
      help: 'Age of the oldest captured change not yet turned into events (0 when none waits).',
      registers,
      async collect() {
        // The oldest row by id is the oldest by commit order; the primary key finds it at once.
        const row = await sql<{ lag: string | null }>`
          SELECT extract(epoch FROM now() - (SELECT created_at FROM outbox ORDER BY id LIMIT 1)) AS lag`.execute(
          db,
        );
        this.set(Math.max(0, Number(row.rows[0]?.lag ?? 0)));
      },
    }),
    unpublished: new Gauge({
      name: 'trips_events_unpublished',
      help: 'Recorded events RabbitMQ has not confirmed yet.',
      registers,
      async collect() {
        const row = await sql<{ n: string }>`SELECT count(*) AS n FROM events_unpublished`.execute(db);
        this.set(Number(row.rows[0]?.n ?? 0));
      },
    }),
  };
}
