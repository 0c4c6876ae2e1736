// Traces with OpenTelemetry (docs/operations.md, "Tracing"): off unless an OTLP endpoint is set.
// This module imports nothing of OpenTelemetry. startTracing loads the SDK (tracing-sdk.ts) only
// when tracing is on, so a process without it carries none of it on its heap, and a hook on a hot
// path costs one check: `const tracer = tracing.tracer; if (tracer) …`.
import { ConfigError } from './env.ts';
import type { Logger } from './logger.ts';
import type { SamplerName, Tracer, TracingConfig } from './tracing-types.ts';

export type { Carrier, OpenSpan, SpanAttributes, Tracer, TracingConfig } from './tracing-types.ts';

/** The process's tracer while tracing is on; undefined otherwise. */
export const tracing: { tracer: Tracer | undefined } = { tracer: undefined };

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

const blank = (value: string | undefined) => value === undefined || value.trim() === '';

/**
 * The standard OTEL_* settings this service honours, or undefined when tracing is off: no
 * OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, or OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none.
 * The endpoint itself, its headers, timeout and certificates are read by the OTLP exporter.
 * Throws ConfigError naming a bad variable, as every other setting does.
 */
export function readTracingConfig(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): TracingConfig | undefined {
  if (blank(env.OTEL_EXPORTER_OTLP_ENDPOINT) && blank(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT))
    return undefined;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim() || 'otlp';
  if (exporter === 'none') return undefined;
  if (exporter !== 'otlp')
    throw new ConfigError([`OTEL_TRACES_EXPORTER must be otlp or none, not "${exporter}"`]);
  const sampler = (env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on') as SamplerName;
  if (!SAMPLERS.includes(sampler))
    throw new ConfigError([`OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(', ')}, not "${sampler}"`]);
  const ratio = blank(env.OTEL_TRACES_SAMPLER_ARG) ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (!(ratio >= 0 && ratio <= 1))
    throw new ConfigError([
      `OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, not "${env.OTEL_TRACES_SAMPLER_ARG}"`,
    ]);
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
    'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new ConfigError([
      `OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (OTLP over HTTP), not "${protocol}"`,
    ]);
  const delay = blank(env.OTEL_BSP_SCHEDULE_DELAY) ? 5_000 : Number(env.OTEL_BSP_SCHEDULE_DELAY);
  if (!(Number.isInteger(delay) && delay >= 0))
    throw new ConfigError([
      `OTEL_BSP_SCHEDULE_DELAY must be milliseconds, not "${env.OTEL_BSP_SCHEDULE_DELAY}"`,
    ]);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || `trips-${service}`;
  return { serviceName, sampler, ratio, protocol, scheduleDelayMs: delay };
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
