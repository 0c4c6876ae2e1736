// What the API process loads. Every module it loads stays on its heap for good, and a larger old
// generation makes each mark-compact longer, a pause every request in flight waits out. So the API
// loads neither a JSON Schema compiler (it only needs the contracts' types and constants) nor the
// dispatcher's service code (the settings module needs only its queue names and its SSRF check):
// the two took about 6 MB of the 24 MB the API's code held after start-up (docs/benchmarks.md).
import { execFileSync } from 'node:child_process';

/** The URL of every module a fresh Node process resolves while it imports `entries`. */
function modulesLoadedBy(...entries: string[]): string[] {
  const urls = entries.map((entry) => new URL(entry, import.meta.url).href);
  // Synchronous resolve hooks see every import and require, the lazy ones included.
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); loaded.push(r.url); return r; } });
    for (const url of ${JSON.stringify(urls)}) await import(url);
    process.stdout.write(JSON.stringify(loaded));
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return [...new Set(JSON.parse(out) as string[])];
}

const packageOf = (url: string) =>
  /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*\/node_modules\/)/.exec(url)?.[1];
const dispatcherFileOf = (url: string) => /\/services\/dispatcher\/src\/(.+)$/.exec(url)?.[1];

const HEAVY_PACKAGES = ['ajv', 'ajv-formats', 'got', 'amqp-connection-manager'];

test('the API loads no JSON Schema compiler and none of the dispatcher service', () => {
  const loaded = modulesLoadedBy('../src/config.ts', '../src/server.ts');
  expect(loaded.map(packageOf)).toEqual(expect.arrayContaining(['express', 'pg', 'kysely']));
  expect([...new Set(loaded.map(packageOf))].filter((name) => name && HEAVY_PACKAGES.includes(name))).toEqual(
    [],
  );
  expect(loaded.map(dispatcherFileOf).filter(Boolean).sort()).toEqual(['ssrf.ts', 'topology.ts']);
});

test('the check sees those packages where they are loaded', () => {
  // The dispatcher's entry point loads its whole service, got included, and validating a message
  // loads ajv: what the API would carry if it imported either.
  const loaded = modulesLoadedBy('../../dispatcher/src/index.ts').map(packageOf);
  expect(loaded).toContain('got');
  expect(loaded).toContain('amqp-connection-manager');
});
