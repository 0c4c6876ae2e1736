// Traces with OpenTelemetry (docs/operations.md, "Tracing"): off unless an OTLP endpoint is set.
// This module imports nothing of OpenTelemetry. startTracing loads the SDK (tracing-sdk.ts) only
// when tracing is on, so a process without it carries none of it on its heap, and a hook on a hot
// path costs one check: `const tracer = tracing.tracer; if (tracer) …`.
import { EnvReader } from './env.ts';
import type { Logger } from './logger.ts';
import type { Tracer, TracingConfig } from './tracing-types.ts';

export type { Carrier, OpenSpan, SpanAttributes, Tracer, TracingConfig } from './tracing-types.ts';

/** The process's tracer while tracing is on; undefined otherwise. */
export const tracing: { tracer: Tracer | undefined } = { tracer: undefined };

/**
 * The standard OTEL_* settings this service honours (the settings table's tracing rows), or
 * undefined when tracing is off: no OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, or OTEL_SDK_DISABLED,
 * or OTEL_TRACES_EXPORTER=none. The endpoint itself, its headers, timeout and certificates are
 * read by the OTLP exporter. Throws ConfigError naming every bad variable, as every other setting
 * does.
 */
export function readTracingConfig(
  service: string,
  source: Record<string, string | undefined> = process.env,
): TracingConfig | undefined {
  const env = new EnvReader(source);
  if (!env.isSet('OTEL_EXPORTER_OTLP_ENDPOINT') && !env.isSet('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'))
    return undefined;
  if (env.read('OTEL_SDK_DISABLED') || env.read('OTEL_TRACES_EXPORTER') === 'none') {
    env.done();
    return undefined;
  }
  const config = {
    serviceName: env.read('OTEL_SERVICE_NAME') ?? `trips-${service}`,
    sampler: env.read('OTEL_TRACES_SAMPLER'),
    ratio: env.read('OTEL_TRACES_SAMPLER_ARG'),
    // The traces' own protocol wins; the general one is read only without it.
    protocol: env.read('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? env.read('OTEL_EXPORTER_OTLP_PROTOCOL'),
    scheduleDelayMs: env.read('OTEL_BSP_SCHEDULE_DELAY'),
  };
  env.done();
  return config;
}

/** Turns tracing on: loads the SDK and sets `tracing.tracer`. Nothing happens without a config. */
export async function startTracing(config: TracingConfig | undefined, logger: Logger): Promise<void> {
  if (!config) return;
  const { createTracer } = await import('./tracing-sdk.ts');
  tracing.tracer = createTracer(config, logger);
  logger.info(
    {
      serviceName: config.serviceName,
      sampler: config.sampler,
      ratio: config.ratio,
      protocol: config.protocol,
    },
    'tracing on: spans go to the OTLP endpoint',
  );
}

/** Sends the spans still buffered and turns tracing off; call after the service stopped. */
export async function stopTracing(): Promise<void> {
  const tracer = tracing.tracer;
  tracing.tracer = undefined;
  await tracer?.shutdown();
}
