import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { withTimeout } from './timeout.ts';

export { Counter, Gauge, Histogram, Registry };

/**
 * One Prometheus registry per service process, with Node's own metrics (CPU, memory, event-loop
 * lag, GC) and every series labelled with the service's name. Each service adds its own metrics to
 * it; the health server serves it at GET /metrics (docs/design/metrics.md lists them).
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/**
 * Buckets (seconds) of every lag histogram of an event's journey: from a poll interval to the
 * three days a webhook's retries may last, so one set serves the first attempt and the last retry
 * and the histograms can be added up. Few enough to keep each histogram at about twenty series.
 */
export const LAG_BUCKETS = [
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400, 259200,
];

/** Seconds from `since` (a Date, or a timestamp as text) to `nowMs`, never negative (clock skew). */
export function secondsSince(since: Date | string, nowMs: number): number {
  const ms = since instanceof Date ? since.getTime() : Date.parse(since);
  return Math.max(0, (nowMs - ms) / 1000);
}

/** How long a scrape waits for a dependency to answer; Prometheus' own default timeout is 10 s. */
const DEPENDENCY_CHECK_MS = 2_000;

/**
 * `trips_dependency_up{dependency}`: 1 when the dependency answered this scrape, 0 when it did not
 * (an error, false, or no answer within 2 s). Checked at scrape time only, so it costs nothing
 * per event; the alerts "Postgres unreachable" and "RabbitMQ unreachable" read it.
 */
export function addDependencyMetric(
  registry: Registry,
  checks: Record<string, () => Promise<unknown> | boolean>,
): void {
  new Gauge({
    name: 'trips_dependency_up',
    help: 'Whether this process reached the dependency at the last scrape (1) or not (0).',
    labelNames: ['dependency'] as const,
    registers: [registry],
    async collect() {
      await Promise.all(
        Object.entries(checks).map(async ([dependency, check]) => {
          const up = await withTimeout(
            Promise.resolve().then(check),
            DEPENDENCY_CHECK_MS,
            () => new Error('no answer'),
          ).then(
            (answer) => answer !== false,
            () => false,
          );
          this.set({ dependency }, up ? 1 : 0);
        }),
      );
    },
  });
}
