export { parseDuration, formatDuration, describeDuration } from './duration.ts';
export { isCalendarTime } from './calendar.ts';
export { ConfigError, EnvReader, readCommonConfig } from './env.ts';
export {
  SETTINGS,
  SETTING_SECTIONS,
  type Reader,
  type ReadableName,
  type Setting,
  type SettingName,
} from './settings-table/index.ts';
export { createLogger, type Logger } from './logger.ts';
export { stopOnSignals } from './signals.ts';
export { runService, type ServiceMain } from './service-main.ts';
export { startHealthServer, portOf, type HealthChecks } from './health.ts';
export { Loop } from './loop.ts';
export { OutageLog } from './outage-log.ts';
export { atMostEvery } from './throttle.ts';
export {
  addDependencyMetric,
  createMetricsRegistry,
  Counter,
  Gauge,
  Histogram,
  LAG_BUCKETS,
  Registry,
  secondsSince,
} from './metrics.ts';
export { withTimeout } from './timeout.ts';
export {
  readTracingConfig,
  startTracing,
  stopTracing,
  tracing,
  type Carrier,
  type OpenSpan,
  type SpanAttributes,
  type Tracer,
  type TracingConfig,
} from './tracing.ts';
