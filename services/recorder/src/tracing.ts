// The recorder's part of an event's trace (docs/design/tracing.md): `event.record`, the
// trace's root, from the change's capture in its writer's transaction to the commit of the batch
// that recorded the event; then `event.publish`, from the publish to RabbitMQ's confirm, whose
// context goes in the message's headers for the dispatcher. Called only while tracing is on.
import type { Options } from '@trips/broker/client';
import { isGroupedType } from '@trips/contracts';
import type { StoredEvent, UnpublishedEvent } from '@trips/db/events';
import type { OpenSpan, SpanAttributes, Tracer } from '@trips/runtime';

/** What a span may say about an event: ids and its type, never its data. */
const eventAttributes = (e: StoredEvent): SpanAttributes => ({
  'trips.event.id': e.id,
  'trips.event.type': e.type,
  'trips.agency.id': e.agency_id,
});

/**
 * One `event.record` span per event of a committed batch, from the capture of its change in the
 * writer's transaction (for a grouped `*.updated` event, of its group's first change) to the commit
 * that recorded it. An event recorded by a version before migration 0020 has no capture time: its
 * span starts at its recording.
 */
export function traceRecorded(
  tracer: Tracer,
  batch: { events: readonly UnpublishedEvent[] },
  committedAt = new Date(),
): void {
  for (const e of batch.events) {
    const captured = e.captured_at ? new Date(e.captured_at) : undefined;
    const recordedAt = new Date(e.created_at);
    tracer.recordEventRoot(e.id, 'event.record', captured ?? recordedAt, committedAt, {
      ...eventAttributes(e),
      'trips.change.captured_at': captured?.toISOString(),
      'trips.event.recorded_at': recordedAt.toISOString(),
      'trips.event.grouped': isGroupedType(e.type),
    });
  }
}

/** Starts `event.publish` and writes its context into the message's headers; ends it when settled. */
export function tracePublish(
  tracer: Tracer,
  e: StoredEvent,
  exchange: string,
  properties: Options.Publish,
): (confirmed: Promise<unknown>) => Promise<unknown> {
  const span: OpenSpan = tracer.startEventSpan(e.id, 'event.publish', 'producer', {
    ...eventAttributes(e),
    'messaging.system': 'rabbitmq',
    'messaging.operation.type': 'send',
    'messaging.destination.name': exchange,
    'messaging.message.id': e.id,
  });
  properties.headers ??= {};
  span.inject(properties.headers as Record<string, unknown>);
  return (confirmed) =>
    confirmed.then(
      (value) => (span.end(), value),
      (error: unknown) => {
        // A refusal (the events queue full) or no confirm in time: it is published again later.
        span.end({ 'error.type': error instanceof Error ? error.message : 'unknown' }, true);
        throw error;
      },
    );
}
