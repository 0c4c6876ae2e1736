// The shapes of tracing (tracing.ts) that the SDK's side (tracing-sdk.ts) implements: in a module
// of their own, so that the SDK's module, loaded only when tracing is on, imports no code back.

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

export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

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
