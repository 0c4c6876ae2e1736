// Traces with OpenTelemetry (docs/operations.md, "Tracing"): off unless an OTLP endpoint is set.
// This module imports nothing of OpenTelemetry. startTracing loads the SDK (tracing-sdk.ts) only
// when tracing is on, so a process without it carries none of it on its heap, and a hook on a hot
// path costs one check: `const tracer = tracing.tracer; if (tracer) …`.
import { ConfigError } from './env.ts';
import type { Logger } from './logger.ts';

/** Attribute values; undefined ones are left out. Never a key, a secret or an event's data. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;
export type SpanKindName = 'server' | 'client' | 'producer' | 'consumer' | 'internal';
/** Where a trace context travels: a broker message's headers, or an HTTP request's. */
export type Carrier = Record<string, unknown>;

export interface OpenSpan {
  /** Ends the span with these attributes added; `failed` marks its status as an error. */
  end(attributes?: SpanAttributes, failed?: boolean): void;
  /** Runs `fn` with this span active: spans started inside it, even after awaits, are its children. */
  run<T>(fn: () => T): T;
  /** Writes this span's context into `carrier` (W3C `traceparent`, `tracestate`). */
  inject(carrier: Carrier): void;
  updateName(name: string): void;
}

export interface Tracer {
  /**
   * The root span of an event's journey, with the trace and span ids derived from the event id,
   * so that every later piece joins it without anything stored (tracing-sdk.ts, eventRoot).
   */
  recordEventRoot(eventId: string, name: string, start: Date, end: Date, attributes: SpanAttributes): void;
  /**
   * A span of an event's journey. Its parent: the context carried in `carrier` (a message's
   * headers) when it is this event's; else the active span when it is of this event's trace; else
   * the event's root span.
   */
  startEventSpan(
    eventId: string,
    name: string,
    kind: SpanKindName,
    attributes: SpanAttributes,
    carrier?: Carrier,
  ): OpenSpan;
  /** Runs `fn` with the context carried in `carrier` active, when it is this event's trace. */
  withCarried<T>(eventId: string, carrier: Carrier | undefined, fn: () => T): T;
  /** Writes the active span's context into `carrier`, e.g. a retry's message headers. */
  injectActive(carrier: Carrier): void;
  /** A server span for an HTTP request, continuing the caller's `traceparent` when it sent one. */
  startRequestSpan(name: string, headers: Carrier, attributes: SpanAttributes): OpenSpan;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** The process's tracer while tracing is on; undefined otherwise. */
export const tracing: { tracer: Tracer | undefined } = { tracer: undefined };

type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface TracingConfig {
  /** The service's name in traces: OTEL_SERVICE_NAME, else `trips-<service>`. */
  serviceName: string;
  sampler: SamplerName;
  /** OTEL_TRACES_SAMPLER_ARG: the share of traces kept by the *traceidratio samplers. */
  ratio: number;
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_BSP_SCHEDULE_DELAY: how long spans wait to be sent in a batch (ms). */
  scheduleDelayMs: number;
}

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
