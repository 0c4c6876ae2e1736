import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Registry };

/**
 * One Prometheus registry per service process, with Node's own metrics (CPU, memory, event-loop
 * lag, GC) and every series labelled with the service's name. Each service adds its own metrics to
 * it; the health server serves it at GET /metrics (docs/operations.md lists them and the alerts).
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
