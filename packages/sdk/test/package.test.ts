import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { VERSION } from '../src/version.ts';

// Issue 25, items 1 and 9: `npm pack` makes a tarball with the built code, its types and a README
// and nothing else; installed into an empty project, it works from ES modules, CommonJS and
// TypeScript, on this machine's Node 20 as well as the project's Node 24, with no dependencies.

const run = promisify(execFile);
const sdk = fileURLToPath(new URL('..', import.meta.url));
const repo = fileURLToPath(new URL('../../..', import.meta.url));
const tsc = join(repo, 'node_modules/typescript/bin/tsc');

/** The machine's own Node (20 here), found outside the project's toolchain, if there is one. */
async function systemNode(): Promise<string | undefined> {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node']) {
    const version = await run(candidate, ['-v']).then(
      ({ stdout }) => stdout.trim(),
      () => undefined,
    );
    if (version && !version.startsWith('v24.')) return candidate;
  }
  return undefined;
}

let dir: string;
let tarball: string;
let files: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trips-sdk-pack-'));
  // npm pack runs prepack, which builds dist/ from nothing.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: sdk });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[]; size: number }[];
  tarball = join(dir, packed!.filename);
  files = packed!.files.map((f) => f.path).sort();
  process.stdout.write(`tarball ${packed!.filename}: ${packed!.size} bytes, ${files.length} files\n`);
  const project = join(dir, 'project');
  await run('mkdir', ['-p', project]);
  await writeFile(join(project, 'package.json'), '{ "name": "agency-app", "private": true }\n');
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball], { cwd: project });
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

test('the tarball holds dist (code and types, ESM and CommonJS), the README and package.json only', () => {
  const outside = files.filter((f) => !/^dist\/(esm|cjs)\/.+\.(js|d\.ts)$/.test(f));
  expect(outside).toEqual(['README.md', 'dist/cjs/package.json', 'package.json']);
  expect(files.some((f) => /test|\.ts$/.test(f.replace(/\.d\.ts$/, '')))).toBe(false);
  for (const entry of [
    'dist/esm/index.js',
    'dist/esm/index.d.ts',
    'dist/cjs/index.js',
    'dist/cjs/index.d.ts',
  ])
    expect(files).toContain(entry);
  expect(files).toContain('dist/esm/cli/main.js');
});

test('package.json: no runtime dependencies, node >= 18, the version the code reports', async () => {
  const manifest = JSON.parse(await readFile(join(sdk, 'package.json'), 'utf8'));
  expect(manifest.dependencies ?? {}).toEqual({});
  expect(manifest.engines).toEqual({ node: '>=18' });
  expect(manifest.version).toBe(VERSION);
  const installed = join(dir, 'project/node_modules');
  expect((await run('ls', [installed])).stdout.split('\n').filter(Boolean).sort()).toEqual(['@trips']);
});

const consumers = {
  'app.mjs': `import { TripService, verifyWebhook, signWebhookForTest, TripServiceError } from '@trips/sdk';
const client = new TripService({ apiKey: 'tps_x', baseUrl: 'http://127.0.0.1:9' });
const event = { object: 'event', id: 'evt_1', type: 'trip.created', created_at: '2026-01-01T00:00:00.000Z',
  related_object: { type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' }, data: {} };
const { body, headers } = signWebhookForTest(event, 'whsec_a');
console.log(verifyWebhook(body, headers, 'whsec_a').id, typeof client.trips.list, TripServiceError.name);`,
  'app.cjs': `const { TripService, verifyWebhook, signWebhookForTest, fileCursorStore } = require('@trips/sdk');
const event = { object: 'event', id: 'evt_2', type: 'trip.created', created_at: '2026-01-01T00:00:00.000Z',
  related_object: { type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' }, data: {} };
const { body, headers } = signWebhookForTest(event, 'whsec_a');
console.log(verifyWebhook(Buffer.from(body), headers, ['whsec_b', 'whsec_a']).id, typeof new TripService({ apiKey: 'k', baseUrl: 'http://x' }).events.consume, typeof fileCursorStore);`,
};

test.each(['system', 'project'] as const)('used from ESM and CommonJS on the %s Node', async (which) => {
  const node = which === 'project' ? process.execPath : await systemNode();
  if (!node) return; // no second Node on this machine
  const project = join(dir, 'project');
  await writeFile(join(project, 'app.mjs'), consumers['app.mjs']);
  await writeFile(join(project, 'app.cjs'), consumers['app.cjs']);
  expect((await run(node, ['app.mjs'], { cwd: project })).stdout.trim()).toBe(
    'evt_1 function TripServiceError',
  );
  expect((await run(node, ['app.cjs'], { cwd: project })).stdout.trim()).toBe('evt_2 function function');
  const help = await run(join(project, 'node_modules/.bin/trips'), ['--version'], {
    cwd: project,
    env: { ...process.env, PATH: `${join(node, '..')}:${process.env.PATH}` },
  });
  expect(help.stdout.trim()).toBe(VERSION);
});

test('type-checks from TypeScript, as ES module and CommonJS, and the types catch misuse', async () => {
  const project = join(dir, 'project');
  const app = `import { TripService, verifyWebhook, type Event, type Trip } from '@trips/sdk';
const client = new TripService({ apiKey: 'tps_x', baseUrl: 'http://localhost:3000', maxRetries: 1 });
export async function main(raw: string, headers: Record<string, string>): Promise<string | null> {
  for await (const trip of client.trips.list({ updatedSince: new Date(), limit: 10 })) {
    const t: Trip = trip;
    void t.dates.num_days;
  }
  const event: Event = verifyWebhook(raw, headers, process.env.SECRET ?? '');
  if (event.type === 'trip.status_changed') return event.data.from;
  const related = await client.events.fetchRelatedObject(event);
  return related?.id ?? null;
}
`;
  await writeFile(join(project, 'app.ts'), app);
  await writeFile(
    join(project, 'bad.ts'),
    `import type { Event } from '@trips/sdk';\nexport const f = (e: Event) => e.data.from;\n`,
  );
  const config = (module: string, files: string[]) =>
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module,
        moduleResolution: module === 'commonjs' ? 'bundler' : module,
        types: ['node'],
        typeRoots: [join(repo, 'node_modules/@types')],
        skipLibCheck: false,
      },
      files,
    });
  for (const module of ['nodenext', 'commonjs']) {
    await writeFile(join(project, `tsconfig.${module}.json`), config(module, ['app.ts']));
    await run(process.execPath, [tsc, '-p', `tsconfig.${module}.json`], { cwd: project });
  }
  await writeFile(join(project, 'tsconfig.bad.json'), config('nodenext', ['bad.ts']));
  const bad = await run(process.execPath, [tsc, '-p', 'tsconfig.bad.json'], { cwd: project }).then(
    () => '',
    (error: { stdout: string }) => error.stdout,
  );
  expect(bad).toContain("Property 'from' does not exist");
}, 60_000);

test('installed by path from a checkout (built), it works as well; the tarball npm pack leaves is git-ignored', async () => {
  // docs/sdk.md's two ways in: the tarball above, or the checkout's packages/sdk by path.
  const linked = join(dir, 'linked');
  await run('mkdir', ['-p', linked]);
  await writeFile(join(linked, 'package.json'), '{ "name": "agency-app", "private": true }\n');
  await run('npm', ['install', '--no-audit', '--no-fund', '--offline', sdk], { cwd: linked });
  await writeFile(join(linked, 'app.mjs'), consumers['app.mjs']);
  expect((await run(process.execPath, ['app.mjs'], { cwd: linked })).stdout.trim()).toBe(
    'evt_1 function TripServiceError',
  );
  // `npm pack` in packages/sdk writes the tarball there; git check-ignore fails when it is not ignored.
  const ignored = await run('git', ['check-ignore', join(sdk, `trips-sdk-${VERSION}.tgz`)], { cwd: repo });
  expect(ignored.stdout.trim()).toBe(join(sdk, `trips-sdk-${VERSION}.tgz`));
}, 60_000);
