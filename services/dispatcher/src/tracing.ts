// The dispatcher's part of an event's trace (docs/design/tracing.md): `event.fan_out`, the
// consumption of the recorder's message, child of its `event.publish` (the context comes in the
// message's headers), and one `webhook.attempt` per attempt, child of the fan-out for a first
// attempt and of the failed attempt for a retry (whose message carries that attempt's context
// through its delay queue). A delivery that waited in its webhook's lane in Postgres, or that an
// owner asked for, carries no context: its spans hang from the event's root span, whose ids every
// service derives from the event id. Called only while tracing is on.
import type { ConsumeMessage } from '@trips/broker/client';
import type { DeliveryMessage, EventMessage } from '@trips/contracts';
import type { Carrier, SpanAttributes, Tracer } from '@trips/runtime';
import type { Outcome } from './outcome.ts';

/** What a span may say about a delivery: ids, its type and attempt, never the data, the URL or a secret. */
const deliveryAttributes = (delivery: DeliveryMessage, source: string): SpanAttributes => ({
  'trips.event.id': delivery.event.id,
  'trips.event.type': delivery.event.type,
  'trips.agency.id': delivery.agency_id,
  'trips.webhook.id': delivery.webhook_id,
  'trips.delivery.attempt': delivery.attempt,
  'trips.delivery.source': source,
});

/** The headers a message came with, as a carrier of its trace context. */
export const headersOf = (message: ConsumeMessage): Carrier | undefined =>
  message.properties.headers as Carrier | undefined;

/** Fans the event out inside `event.fan_out`; `fanOut` answers how many webhooks it went to. */
export async function traceFanOut(
  tracer: Tracer,
  message: ConsumeMessage,
  body: EventMessage,
  fanOut: () => Promise<number>,
): Promise<void> {
  const span = tracer.startEventSpan(
    body.event.id,
    'event.fan_out',
    'consumer',
    {
      'trips.event.id': body.event.id,
      'trips.event.type': body.event.type,
      'trips.agency.id': body.agency_id,
      'messaging.system': 'rabbitmq',
      'messaging.operation.type': 'process',
      'messaging.message.id': body.event.id,
    },
    headersOf(message),
  );
  try {
    span.end({ 'trips.webhooks': await span.run(fanOut) });
  } catch (error) {
    span.end(undefined, true);
    throw error;
  }
}

/**
 * One delivery inside `webhook.attempt` (renamed `delivery.<outcome>` when nothing was sent: held in
 * the lane, deferred, dropped). A retry published inside it carries its context (deliverer.ts).
 */
export async function traceAttempt(
  tracer: Tracer,
  delivery: DeliveryMessage,
  source: string,
  attempt: () => Promise<Outcome>,
): Promise<Outcome> {
  const span = tracer.startEventSpan(
    delivery.event.id,
    'webhook.attempt',
    'client',
    deliveryAttributes(delivery, source),
  );
  let outcome: Outcome;
  try {
    outcome = await span.run(attempt);
  } catch (error) {
    span.end(undefined, true);
    throw error;
  }
  const result = 'result' in outcome ? outcome.result : undefined;
  if (!result) span.updateName(`delivery.${outcome.kind}`);
  span.end(
    {
      'trips.delivery.outcome': outcome.kind,
      'http.response.status_code': result?.statusCode ?? undefined,
      'error.type': result?.error ?? undefined,
      'trips.delivery.duration_ms': result?.durationMs,
      'trips.delivery.retry_in_ms': 'delayMs' in outcome ? outcome.delayMs : undefined,
      'trips.delivery.reason': 'reason' in outcome ? outcome.reason : undefined,
    },
    outcome.kind === 'retry_scheduled' || outcome.kind === 'gave_up',
  );
  return outcome;
}
