import { sql, type Kysely } from 'kysely';
import { isGroupedType } from '@trips/contracts';
import type { Database } from '@trips/db';
import type { StoredEvent, UnpublishedEvent } from '@trips/db/events';
import { Counter, Gauge, Histogram, LAG_BUCKETS, secondsSince, type Registry } from '@trips/runtime';

/** What the recorder's metrics need of a batch that committed (recorder.ts, BatchResult). */
interface RecordedBatch {
  /** The changes it took, with the time each was captured in its writer's transaction. */
  captured: readonly { created_at: Date | string }[];
  events: readonly StoredEvent[];
}

/**
 * The recorder's Prometheus metrics (docs/design/metrics.md says what each means;
 * docs/operations.md what each alert asks of people). The lag histograms carry no agency label, nor the event type: each series is kept by every
 * Prometheus for as long as it exists, and one per agency would grow with the customers, not with
 * the code (docs/design/metrics.md, "Why no agency label").
 */
export function recorderMetrics(registry: Registry, db: Kysely<Database>) {
  const registers = [registry];
  const captured = new Counter({
    name: 'trips_changes_captured_total',
    help: 'Captured changes (outbox rows) the recorder has processed.',
    registers,
  });
  const recorded = new Counter({
    name: 'trips_events_recorded_total',
    help: 'Events recorded, by type.',
    labelNames: ['type'] as const,
    registers,
  });
  const published = new Counter({
    name: 'trips_events_published_total',
    help: 'Recorded events confirmed by RabbitMQ.',
    registers,
  });
  // The writer's commit time is nowhere to be read (Postgres keeps none unless
  // track_commit_timestamp is on); the outbox row's created_at, taken by the capture trigger in the
  // writer's transaction just before it commits, is the closest time the change carries.
  const captureToRecord = new Histogram({
    name: 'trips_change_capture_to_record_seconds',
    help: 'From a change captured in its writer’s transaction (the outbox row) to the commit of the recorder batch that turned it into events, or into its pending *.updated group.',
    buckets: LAG_BUCKETS,
    registers,
  });
  // An event carries its recording time (created_at) to the publisher and to every delivery.
  const recordToPublish = new Histogram({
    name: 'trips_event_record_to_publish_seconds',
    help: 'From an event recorded (its created_at) to RabbitMQ confirming it into a queue.',
    buckets: LAG_BUCKETS,
    registers,
  });
  // The capture time goes with the event too, in its events_unpublished row (whichever replica
  // publishes it, after a crash too) and then in its message's headers, to the dispatcher's
  // capture → delivery. A grouped event waits for its group by design (EVENT_GROUP_QUIET, up to
  // EVENT_GROUP_MAX): `grouped` keeps that wait apart from the platform's own lag.
  const captureToPublish = new Histogram({
    name: 'trips_change_capture_to_publish_seconds',
    help: 'From a change captured in its writer’s transaction to RabbitMQ confirming its event into a queue; for a grouped *.updated event (grouped="true"), from the earliest change of its group, so the grouping wait is in it.',
    labelNames: ['grouped'] as const,
    buckets: LAG_BUCKETS,
    registers,
  });
  new Gauge({
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
  });
  new Gauge({
    name: 'trips_events_unpublished',
    help: 'Recorded events RabbitMQ has not confirmed yet.',
    registers,
    async collect() {
      const row = await sql<{ n: string }>`SELECT count(*) AS n FROM events_unpublished`.execute(db);
      this.set(Number(row.rows[0]?.n ?? 0));
    },
  });

  return {
    /** A record batch committed: one observation per change, one count per event. */
    batchRecorded(batch: RecordedBatch, nowMs = Date.now()): void {
      captured.inc(batch.captured.length);
      for (const change of batch.captured) captureToRecord.observe(secondsSince(change.created_at, nowMs));
      for (const e of batch.events) recorded.inc({ type: e.type });
    },
    /**
     * RabbitMQ confirmed these events and the batch that forgets them committed. An event whose
     * capture time is not known (recorded by a version before migration 0020) is left out of
     * capture → publish rather than guessed.
     */
    eventsPublished(events: readonly UnpublishedEvent[], nowMs = Date.now()): void {
      published.inc(events.length);
      for (const e of events) {
        recordToPublish.observe(secondsSince(e.created_at, nowMs));
        if (e.captured_at)
          captureToPublish.observe(
            { grouped: String(isGroupedType(e.type)) },
            secondsSince(e.captured_at, nowMs),
          );
      }
    },
  };
}
