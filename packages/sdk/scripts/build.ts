// Builds dist/ for npm: dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts, from
// one tsc configuration run twice. No bundler: the package is small and has no dependencies.
// Run by `pnpm --filter @trips/sdk build` and by npm pack (prepack).
import { execFileSync } from 'node:child_process';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compile = (...args: string[]) =>
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', ...args], {
    cwd: root,
    stdio: 'inherit',
  });

rmSync(`${root}/dist`, { recursive: true, force: true });
compile('--outDir', 'dist/esm');
// verbatimModuleSyntax (the repo's rule for sources Node runs as written) forbids import syntax in
// a CommonJS output; tsc converts it here.
compile(
  '--outDir',
  'dist/cjs',
  '--module',
  'commonjs',
  '--moduleResolution',
  'bundler',
  '--verbatimModuleSyntax',
  'false',
);
// The package is "type": "module"; this file makes Node read dist/cjs/*.js as CommonJS.
writeFileSync(`${root}/dist/cjs/package.json`, '{ "type": "commonjs" }\n');
chmodSync(`${root}/dist/esm/cli/main.js`, 0o755);
