import type { SamplerName } from '../tracing-types.ts';
import type { Setting } from './row.ts';

const SERVICES = ['api', 'recorder', 'dispatcher'] as const;
const SAMPLERS: readonly SamplerName[] = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
];
/** OTLP over HTTP: the exporter the services load speaks no gRPC. */
const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/**
 * The standard OpenTelemetry variables the services honour (docs/operations.md, "Tracing"); tracing
 * is off unless an endpoint is set. The OTLP exporter reads the endpoint itself, and the other
 * standard OTEL_EXPORTER_OTLP_* (headers, timeout, certificates, compression).
 */
export const tracingSettings = {
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: 'text',
    defaultText: 'none: tracing off',
    readers: SERVICES,
    meaning: "The collector's OTLP/HTTP base URL (`/v1/traces` is added), e.g. `http://otel-collector:4318`.",
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    kind: 'text',
    readers: SERVICES,
    meaning: 'The full traces URL, instead of the base URL above.',
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    kind: 'choice',
    choices: PROTOCOLS,
    default: 'http/protobuf',
    readers: SERVICES,
    meaning: 'How spans are sent: protobuf or JSON over HTTP; gRPC is refused at start.',
  },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: {
    kind: 'choice',
    choices: PROTOCOLS,
    defaultText: '`OTEL_EXPORTER_OTLP_PROTOCOL`',
    readers: SERVICES,
    meaning: 'The same for traces alone, instead of `OTEL_EXPORTER_OTLP_PROTOCOL`.',
  },
  OTEL_EXPORTER_OTLP_HEADERS: {
    kind: 'external',
    readers: SERVICES,
    meaning: "`key=value,…` sent with every export: a vendor's API key goes in the Secret.",
  },
  OTEL_SERVICE_NAME: {
    kind: 'text',
    defaultText: '`trips-api`, `trips-recorder`, `trips-dispatcher`',
    readers: SERVICES,
    meaning: "The service's name in traces.",
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    kind: 'external',
    readers: SERVICES,
    meaning: 'More resource attributes, e.g. `deployment.environment.name=prod`.',
  },
  OTEL_TRACES_SAMPLER: {
    kind: 'choice',
    choices: SAMPLERS,
    default: 'parentbased_always_on',
    readers: SERVICES,
    meaning: 'Which traces are kept; a `parentbased_*` one follows the caller that sent a `traceparent`.',
  },
  OTEL_TRACES_SAMPLER_ARG: {
    kind: 'number',
    default: 1,
    min: 0,
    max: 1,
    readers: SERVICES,
    meaning: 'The share of traces the `*traceidratio` samplers keep.',
  },
  OTEL_BSP_SCHEDULE_DELAY: {
    kind: 'int',
    default: 5000,
    min: 0,
    readers: SERVICES,
    meaning: 'Milliseconds between batches of spans.',
  },
  OTEL_SDK_DISABLED: {
    kind: 'bool',
    default: false,
    readers: SERVICES,
    meaning: '`true` turns tracing off even with an endpoint.',
  },
  OTEL_TRACES_EXPORTER: {
    kind: 'choice',
    choices: ['otlp', 'none'],
    default: 'otlp',
    readers: SERVICES,
    meaning: '`none` turns tracing off even with an endpoint.',
  },
} as const satisfies Record<string, Setting>;
