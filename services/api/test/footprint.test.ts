// What the API process loads. Every module it loads stays on its heap for good, and a larger old
// generation makes each mark-compact longer, a pause every request in flight waits out. So the API
// loads neither a JSON Schema compiler (it only needs the contracts' types and constants), nor the
// dispatcher's code (the settings module needs only @trips/broker's queue names and SSRF check),
// nor undici, which an ES import of node:http brings (eslint.config.js): together a large part of
// what the API's code held after start-up (docs/benchmarks/api.md, "Less code on the API's heap").
// Nor, while tracing is off, OpenTelemetry's SDK: it is imported only when tracing starts
// (docs/design/tracing.md).
import { execFileSync } from 'node:child_process';

interface Loaded {
  /** The URL of every module resolved. */
  modules: string[];
  /** Node's own modules, as `process.moduleLoadList` names them. */
  builtins: string[];
}

/** What a fresh Node process loads while it imports `entries`. */
function loadedBy(...entries: string[]): Loaded {
  const urls = entries.map((entry) => new URL(entry, import.meta.url).href);
  // Synchronous resolve hooks see every import and require, the lazy ones included.
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
    for (const url of ${JSON.stringify(urls)}) await import(url);
    process.stdout.write(JSON.stringify({ modules: loaded, builtins: process.moduleLoadList }));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(out) as Loaded;
}

const packageOf = (url: string) =>
  /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*\/node_modules\/)/.exec(url)?.[1];
const dispatcherFileOf = (url: string) => /\/services\/dispatcher\/src\/(.+)$/.exec(url)?.[1];

const HEAVY_PACKAGES = ['ajv', 'ajv-formats', 'got', 'amqp-connection-manager'];
const isUndici = (builtin: string) => builtin.includes('undici');
/** OpenTelemetry's SDK and exporter; not its API, which prom-client loads anyway (for exemplars). */
const isOpenTelemetrySdk = (name: string | undefined) =>
  (name?.startsWith('@opentelemetry/') ?? false) && name !== '@opentelemetry/api';

test('the API loads no JSON Schema compiler, none of the dispatcher service and no undici', () => {
  const { modules, builtins } = loadedBy('../src/config.ts', '../src/server.ts');
  const packages = [...new Set(modules.map(packageOf))];
  expect(packages).toEqual(expect.arrayContaining(['express', 'pg', 'kysely']));
  expect(packages.filter((name) => name && HEAVY_PACKAGES.includes(name))).toEqual([]);
  expect(modules.map(dispatcherFileOf).filter(Boolean).sort()).toEqual([]);
  expect(builtins.filter(isUndici)).toEqual([]);
  expect(packages.filter(isOpenTelemetrySdk)).toEqual([]);
});

test('the check sees them where they are loaded', () => {
  // The dispatcher's entry point loads its whole service: its sender imports node:https as an ES
  // module, and amqp-connection-manager. What the API would carry if it imported it.
  const { modules, builtins } = loadedBy('../../dispatcher/src/index.ts');
  expect(modules.map(packageOf)).toEqual(expect.arrayContaining(['amqp-connection-manager']));
  expect(builtins.some(isUndici)).toBe(true);
});

test('the check sees OpenTelemetry where tracing loads it', () => {
  const { modules } = loadedBy('../../../packages/runtime/src/tracing-sdk.ts');
  expect(modules.map(packageOf)).toEqual(
    expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/otlp-exporter-base']),
  );
});
