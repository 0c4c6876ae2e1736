import { ConfigError } from '../src/env.ts';
import { readTracingConfig } from '../src/tracing.ts';

// Tracing is off unless an endpoint is set, and a bad OTEL_* value stops the start naming the
// variable, as every other setting does (docs/operations.md, "Tracing").

const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

test('off without an endpoint, or when disabled', () => {
  expect(readTracingConfig('api', {})).toBeUndefined();
  expect(readTracingConfig('api', { OTEL_EXPORTER_OTLP_ENDPOINT: ' ' })).toBeUndefined();
  expect(readTracingConfig('api', { ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  expect(readTracingConfig('api', { ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
});

test('on with an endpoint: the standard defaults, the service named after ours', () => {
  expect(readTracingConfig('recorder', endpoint)).toEqual({
    serviceName: 'trips-recorder',
    sampler: 'parentbased_always_on',
    ratio: 1,
    protocol: 'http/protobuf',
    scheduleDelayMs: 5_000,
  });
  expect(
    readTracingConfig('api', {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
      OTEL_SERVICE_NAME: 'edge-api',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    }),
  ).toMatchObject({
    serviceName: 'edge-api',
    sampler: 'parentbased_traceidratio',
    ratio: 0.25,
    protocol: 'http/json',
  });
});

test.each([
  ['OTEL_TRACES_SAMPLER', 'sometimes'],
  ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
  ['OTEL_TRACES_SAMPLER_ARG', 'half'],
  ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
  ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'grpc'],
  ['OTEL_TRACES_EXPORTER', 'zipkin'],
  ['OTEL_BSP_SCHEDULE_DELAY', '1s'],
])('%s=%s is refused, naming the variable', (name, value) => {
  const read = () => readTracingConfig('api', { ...endpoint, [name]: value });
  expect(read).toThrow(ConfigError);
  expect(read).toThrow(name);
});

test('every bad OTEL_* value is named in one round, as with the other settings', () => {
  const read = () =>
    readTracingConfig('api', {
      ...endpoint,
      OTEL_TRACES_SAMPLER: 'sometimes',
      OTEL_BSP_SCHEDULE_DELAY: '1s',
    });
  expect(read).toThrow(/OTEL_TRACES_SAMPLER must be one of [^]*OTEL_BSP_SCHEDULE_DELAY must be/);
});

test("the traces' own protocol wins over the general one", () => {
  const config = readTracingConfig('api', {
    ...endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
  });
  expect(config?.protocol).toBe('http/json');
});
