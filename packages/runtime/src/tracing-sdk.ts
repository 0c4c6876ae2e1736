// The OpenTelemetry SDK behind tracing.ts's Tracer, loaded only when tracing is on. One span
// processor batching spans to the OTLP/HTTP endpoint the OTEL_EXPORTER_OTLP_* variables name,
// the W3C trace context (traceparent) in HTTP and broker message headers, and AsyncLocalStorage
// for the active span.
import { createHash } from 'node:crypto';
import {
  context,
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPExporterBase } from '@opentelemetry/otlp-exporter-base';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import {
  JsonTraceSerializer,
  ProtobufTraceSerializer,
  TraceExporterMetricsHelper,
} from '@opentelemetry/otlp-transformer';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type IdGenerator,
  type ReadableSpan,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { Logger } from './logger.ts';
import { atMostEvery } from './throttle.ts';
import type {
  Carrier,
  OpenSpan,
  SpanAttributes,
  SpanKindName,
  Tracer,
  TracingConfig,
} from './tracing-types.ts';

const KINDS: Record<SpanKindName, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
  internal: SpanKind.INTERNAL,
};

/**
 * An event's trace id and its root span's id: the first 24 bytes of SHA-256 of the event id.
 * Every service computes them alone, so the recorder's root span, a retry hours later, a delivery
 * that waited in its webhook's lane in Postgres and an owner's redelivery all join one trace
 * without any id stored beside the event (docs/design/tracing.md).
 */
function eventRoot(eventId: string): { traceId: string; spanId: string } {
  const hex = createHash('sha256').update(`trips.event:${eventId}`).digest('hex');
  return { traceId: hex.slice(0, 32), spanId: hex.slice(32, 48) };
}

/** Random ids, except for the one span being started with ids of its own (an event's root). */
class EventIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: { traceId: string; spanId: string } | undefined;
  generateTraceId = () => this.next?.traceId ?? this.random.generateTraceId();
  generateSpanId = () => this.next?.spanId ?? this.random.generateSpanId();
}

function samplerOf(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.ratio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function exporterOf(config: TracingConfig): SpanExporter {
  const json = config.protocol === 'http/json';
  const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', {
    'Content-Type': json ? 'application/json' : 'application/x-protobuf',
  });
  return new OTLPExporterBase<ReadableSpan[]>(
    createOtlpHttpExportDelegate(
      options,
      json ? JsonTraceSerializer : ProtobufTraceSerializer,
      'otlp_http_span_exporter',
      TraceExporterMetricsHelper,
      undefined,
    ),
  );
}

/** Header values as strings: amqplib may hand a header back as a Buffer. */
const getter: TextMapGetter<Carrier> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => {
    const value = carrier[key];
    if (value === undefined || value === null) return undefined;
    if (Array.isArray(value)) return value.map(String);
    return Buffer.isBuffer(value) ? value.toString('utf8') : String(value as string);
  },
};
const setter: TextMapSetter<Carrier> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

function attributesOf(attributes: SpanAttributes): Attributes {
  const kept: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) kept[key] = value;
  return kept;
}

export function createTracer(config: TracingConfig, logger: Logger): Tracer {
  // The SDK reports export failures (an endpoint away) through diag; a line a minute at most.
  const diagDue = atMostEvery(60_000);
  const warn = (message: string, ...args: unknown[]) => {
    if (diagDue()) logger.warn({ detail: args.map(String).join(' ').slice(0, 500) }, `tracing: ${message}`);
  };
  diag.setLogger(
    { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} },
    DiagLogLevel.WARN,
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

  const sampler = samplerOf(config);
  const ids = new EventIds();
  const provider = new TracerProvider({
    sampler,
    idGenerator: ids,
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ 'service.name': config.serviceName })),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: exporterOf(config), scheduledDelayMillis: config.scheduleDelayMs }),
    ],
  });
  const tracer = provider.getTracer('@trips/runtime');
  const propagator = new W3CTraceContextPropagator();

  /** The event's root span as a parent, sampled as the sampler decides for its (derived) trace id. */
  const rootContext = (eventId: string): Context => {
    const { traceId, spanId } = eventRoot(eventId);
    const decision = sampler.shouldSample(ROOT_CONTEXT, traceId, 'event.record', SpanKind.INTERNAL, {}, []);
    const sampled = decision.decision === SamplingDecision.RECORD_AND_SAMPLED;
    const root: SpanContext = {
      traceId,
      spanId,
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: true,
    };
    return trace.setSpanContext(ROOT_CONTEXT, root);
  };

  /** The carried context, when it is of this event's trace (a forged or foreign header is ignored). */
  const carriedFor = (eventId: string, carrier: Carrier | undefined): Context | undefined => {
    if (!carrier) return undefined;
    const carried = propagator.extract(ROOT_CONTEXT, carrier, getter);
    return trace.getSpanContext(carried)?.traceId === eventRoot(eventId).traceId ? carried : undefined;
  };

  const open = (span: Span, parent: Context): OpenSpan => ({
    end(attributes, failed) {
      if (attributes) span.setAttributes(attributesOf(attributes));
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    run: (fn) => context.with(trace.setSpan(parent, span), fn),
    inject: (carrier) => propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, setter),
    updateName: (name) => span.updateName(name),
  });

  return {
    recordEventRoot(eventId, name, start, end, attributes) {
      ids.next = eventRoot(eventId);
      try {
        tracer
          .startSpan(
            name,
            { root: true, startTime: start, attributes: attributesOf(attributes) },
            ROOT_CONTEXT,
          )
          .end(end);
      } finally {
        ids.next = undefined;
      }
    },
    startEventSpan(eventId, name, kind, attributes, carrier) {
      const active = context.active();
      const parent =
        carriedFor(eventId, carrier) ??
        (trace.getSpanContext(active)?.traceId === eventRoot(eventId).traceId
          ? active
          : rootContext(eventId));
      const span = tracer.startSpan(
        name,
        { kind: KINDS[kind], attributes: attributesOf(attributes) },
        parent,
      );
      return open(span, parent);
    },
    withCarried(eventId, carrier, fn) {
      const carried = carriedFor(eventId, carrier);
      return carried ? context.with(carried, fn) : fn();
    },
    injectActive(carrier) {
      propagator.inject(context.active(), carrier, setter);
    },
    startRequestSpan(name, headers, attributes) {
      const parent = propagator.extract(ROOT_CONTEXT, headers, getter);
      const span = tracer.startSpan(
        name,
        { kind: SpanKind.SERVER, attributes: attributesOf(attributes) },
        parent,
      );
      return open(span, parent);
    },
    async shutdown() {
      await provider.shutdown();
      context.disable();
    },
  };
}
