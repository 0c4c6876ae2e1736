// The settings table's "read by" is what each process's configuration really reads: every name a
// reader reads is a row naming it, and every row names only processes that read it. A config that
// reads a variable outside the table, or a row whose readers drifted, fails here.
import { readTracingConfig, SETTINGS, type Reader, type Setting } from '@trips/runtime';
import { defaultBaseUrl, readBrokerConfig, readConfig } from '../../packages/tripctl/src/config.ts';
import { deployables, namesRead } from '../deploy/helpers.ts';

const rows = Object.entries(SETTINGS as Record<string, Setting>);

/** Tracing is read only with an endpoint; this one lets every other OTEL_* be read too. */
const tracingOn = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' };

const readBy: Record<Reader, () => Set<string>> = {
  api: () => service('api'),
  recorder: () => service('recorder'),
  dispatcher: () => service('dispatcher'),
  // Every command reads readConfig; the demo commands defaultBaseUrl, the webhook commands readBrokerConfig.
  tripctl: () =>
    new Set([readConfig, defaultBaseUrl, readBrokerConfig].flatMap((parse) => [...namesRead(parse)])),
};

/** A service's config, and the tracing settings runService reads beside it. */
function service(name: 'api' | 'recorder' | 'dispatcher'): Set<string> {
  const tracing = namesRead((env) => readTracingConfig(name, env), tracingOn);
  return new Set([...namesRead(deployables[name].parse), ...tracing]);
}

test.each(Object.keys(readBy) as Reader[])('%s reads exactly the rows that name it', (reader) => {
  const listed = rows
    .filter(([, row]) => row.kind !== 'external' && row.readers.includes(reader))
    .map(([name]) => name);
  expect([...readBy[reader]()].sort()).toEqual(listed.sort());
});

test('every row is read by someone', () => {
  expect(rows.filter(([, row]) => row.readers.length === 0).map(([name]) => name)).toEqual([]);
});
