import type { Topology } from '@trips/broker';
import { isGroupedType, type DeliveryMessage } from '@trips/contracts';
import { Counter, Gauge, Histogram, LAG_BUCKETS, secondsSince, type Registry } from '@trips/runtime';
import { LINE_WAIT_ENDS, type LineWaitEnd, type Outcome, type Source } from './deliverer.ts';
import type { Endpoints } from './endpoint/endpoints.ts';

/**
 * The dispatcher's Prometheus metrics (docs/design/metrics.md says what each means;
 * docs/operations.md what each alert asks of people). No histogram has an agency or webhook label: each series is kept by every Prometheus for as
 * long as it exists, and one per webhook would grow with the customers, not with the code. Which
 * webhook is late is in the attempts log (tripctl webhook attempts), not in Prometheus.
 */
export function dispatcherMetrics(
  registry: Registry,
  deps: {
    endpoints: Endpoints;
    /** A passive declare, on a channel apart from the consumers' (RabbitMQ closes it if the queue is missing). */
    checkQueue: (queue: string) => Promise<{ messageCount: number }>;
    topology: Topology;
    /** Deliveries waiting in webhook lanes, all dispatchers together (Postgres). */
    countHeld: () => Promise<number>;
    /** The oldest pending deliveries' ages in seconds, null when none waits (Postgres). */
    pendingAges: () => Promise<{ held: number | null; retryScheduled: number | null }>;
  },
) {
  const registers = [registry];
  const deliveries = new Counter({
    name: 'trips_deliveries_total',
    help: 'Deliveries handled, by outcome: delivered, retry_scheduled, asked_to_wait (the receiver answered 429 or 503; back in the lane until its pause ends), gave_up, held (put in the webhook lane), deferred (claimed from the lane, not attempted), dropped; held, deferred and dropped by reason too.',
    labelNames: ['outcome', 'reason'] as const,
    registers,
  });
  const attempts = new Histogram({
    name: 'trips_delivery_attempt_duration_seconds',
    help: 'Duration of webhook attempts, by result (success or the error class).',
    labelNames: ['result'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const deliveryLag = deliveryLagMetrics(registers);
  const lineWait = lineWaitMetric(registers);
  const switchedOff = new Counter({
    name: 'trips_webhooks_switched_off_total',
    help: 'Webhooks switched off by the failure policy.',
    registers,
  });
  new Gauge({
    name: 'trips_breakers_open',
    help: 'Webhook endpoints whose circuit breaker is open in this process.',
    registers,
    collect() {
      this.set(deps.endpoints.openCount());
    },
  });
  new Gauge({
    name: 'trips_held_deliveries',
    help: 'Deliveries waiting in webhook lanes (Postgres) for their webhook to have room, all dispatchers together.',
    registers,
    async collect() {
      try {
        this.set(await deps.countHeld());
      } catch {
        this.set(NaN); // Postgres away: the rest of /metrics still answers
      }
    },
  });
  new Gauge({
    name: 'trips_pending_delivery_oldest_age_seconds',
    help: 'How long the oldest pending delivery has waited, by its last outcome: held (in a webhook lane, since its event was recorded) or retry_scheduled (since the first failure of the longest-failing webhook still on); 0 when none waits.',
    labelNames: ['outcome'] as const,
    registers,
    async collect() {
      try {
        const ages = await deps.pendingAges();
        this.set({ outcome: 'held' }, ages.held ?? 0);
        this.set({ outcome: 'retry_scheduled' }, ages.retryScheduled ?? 0);
      } catch {
        this.set({ outcome: 'held' }, NaN);
        this.set({ outcome: 'retry_scheduled' }, NaN);
      }
    },
  });
  new Gauge({
    name: 'trips_queue_depth',
    help: 'Messages ready in each of the dispatcher’s queues (events, express, deliveries, each retry delay, parked).',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      const t = deps.topology;
      const queues = {
        events: t.eventsQueue,
        express: t.expressQueue,
        deliveries: t.deliveriesQueue,
        parked: t.parkedQueue,
      };
      for (const delay of t.delaysMs) Object.assign(queues, { [`retry_${delay}ms`]: t.retryQueue(delay) });
      await Promise.all(
        Object.entries(queues).map(async ([label, name]) => {
          try {
            const { messageCount } = await deps.checkQueue(name);
            this.set({ queue: label }, messageCount);
          } catch {
            // A missing queue (deleted, and declared again once a consumer comes back), or its
            // channel closed by that: this queue goes unreported instead of failing every metric.
            this.remove({ queue: label });
          }
        }),
      );
    },
  });

  return {
    switchedOff,
    /** A delivery waited `ms` for its endpoint's slot, and then went out or to its lane. */
    lineWait,
    /**
     * An outcome; `capturedAt` is when the event's change was captured, when known. Without it (a
     * message of a version before it, an owner's redelivery) capture → delivery is not observed.
     */
    observe(outcome: Outcome, delivery: DeliveryMessage, source: Source, capturedAt?: Date): void {
      // Held, deferred and dropped say why: a lane filling because slots were taken
      // (endpoint_busy) reads differently from one the receiver's pace or breaker fills.
      deliveries.inc(
        'reason' in outcome ? { outcome: outcome.kind, reason: outcome.reason } : { outcome: outcome.kind },
      );
      if (!('result' in outcome)) return;
      attempts.observe({ result: outcome.result.error ?? 'success' }, outcome.result.durationMs / 1000);
      if (outcome.kind === 'delivered' && !ownerRequested(delivery, source))
        deliveryLag(delivery, outcome.result.at.getTime() + outcome.result.durationMs, capturedAt);
    },
  };
}

/**
 * A webhook taking deliveries more slowly than they come: its slots stay taken, and deliveries from
 * the shared queues wait in memory for one, holding their messages (bench:capacity's stall).
 */
function lineWaitMetric(registers: Registry[]) {
  const lineWaits = new Histogram({
    name: 'trips_endpoint_line_wait_seconds',
    help: "How long deliveries from the shared queues waited in memory for a slot of their webhook's endpoint in this dispatcher, those that had to; then: attempted (a slot came free), or held (the wait ran out or the breaker opened: put in the webhook's lane).",
    labelNames: ['then'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers,
  });
  // Both series exist from the start, at zero: a dashboard reads "none waited", not "no data".
  for (const then of LINE_WAIT_ENDS) lineWaits.zero({ then });
  return (ms: number, then: LineWaitEnd): void => {
    lineWaits.observe({ then }, ms / 1000);
  };
}

/**
 * The lag histograms of a delivery's first 2xx, observed when it came (`answeredAt`, ms). `attempt`
 * tells the platform's own lag (first) from a receiver's downtime (retry).
 */
function deliveryLagMetrics(registers: Registry[]) {
  // From the event's recording (its created_at, which every delivery carries).
  const fromRecord = new Histogram({
    name: 'trips_event_record_to_delivery_seconds',
    help: 'From an event recorded (its created_at) to the first 2xx of its delivery to a webhook; attempt is first or retry.',
    labelNames: ['attempt'] as const,
    buckets: LAG_BUCKETS,
    registers,
  });
  // From the writer's transaction, which "how late are webhooks" asks: the capture time comes in
  // the event message's headers, and goes with each retry and each delivery held in a lane
  // (@trips/broker's message-properties.ts, migration 0020). A grouped event waits for its group by
  // design: `grouped` keeps that apart, and the lag alert reads grouped="false".
  const fromCapture = new Histogram({
    name: 'trips_change_capture_to_delivery_seconds',
    help: 'From a change captured in its writer’s transaction to the first 2xx of its event’s delivery to a webhook; attempt is first or retry; for a grouped *.updated event (grouped="true"), from the earliest change of its group, so the grouping wait is in it.',
    labelNames: ['attempt', 'grouped'] as const,
    buckets: LAG_BUCKETS,
    registers,
  });
  return (delivery: DeliveryMessage, answeredAt: number, capturedAt: Date | undefined): void => {
    const attempt = delivery.attempt === 1 ? 'first' : 'retry';
    fromRecord.observe({ attempt }, secondsSince(delivery.event.created_at, answeredAt));
    // Not known (a message of a version before it, an owner's redelivery): not guessed.
    if (!capturedAt) return;
    const type = delivery.event.type;
    const grouped = String(isGroupedType(type));
    fromCapture.observe({ attempt, grouped }, secondsSince(capturedAt, answeredAt));
  };
}

/**
 * A test event or an owner's redelivery (published straight to the deliveries queue as a first
 * attempt, packages/settings): its event may be weeks old, and its lag says nothing about ours.
 * A redelivery that had to wait in a lane is not told apart in record → delivery (rare;
 * docs/design/metrics.md); it carries no capture time, so capture → delivery leaves it out.
 */
function ownerRequested(delivery: DeliveryMessage, source: Source): boolean {
  return (
    (source === 'deliveries_queue' && delivery.attempt === 1) || delivery.event.id.startsWith('evt_test_')
  );
}
