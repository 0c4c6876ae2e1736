import type { Topology } from '@trips/broker';
import { Counter, Gauge, Histogram, type Registry } from '@trips/runtime';
import type { Outcome } from './deliverer.ts';
import type { Endpoints } from './endpoints.ts';

/** The dispatcher's Prometheus metrics (docs/operations.md says what to alert on). */
export function dispatcherMetrics(
  registry: Registry,
  deps: {
    endpoints: Endpoints;
    /** A passive declare, on a channel apart from the consumers' (RabbitMQ closes it if the queue is missing). */
    checkQueue: (queue: string) => Promise<{ messageCount: number }>;
    topology: Topology;
    /** Deliveries waiting in webhook lanes, all dispatchers together (Postgres). */
    countHeld: () => Promise<number>;
  },
) {
  const registers = [registry];
  const deliveries = new Counter({
    name: 'trips_deliveries_total',
    help: 'Deliveries handled, by outcome: delivered, retry_scheduled, gave_up, held (put in the webhook lane), deferred (claimed from the lane, not attempted), dropped.',
    labelNames: ['outcome'] as const,
    registers,
  });
  const attempts = new Histogram({
    name: 'trips_delivery_attempt_duration_seconds',
    help: 'Duration of webhook attempts, by result (success or the error class).',
    labelNames: ['result'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
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
    observe(outcome: Outcome): void {
      deliveries.inc({ outcome: outcome.kind });
      if ('result' in outcome) {
        attempts.observe({ result: outcome.result.error ?? 'success' }, outcome.result.durationMs / 1000);
      }
    },
  };
}
