// knip (https://knip.dev), run by `pnpm lint`: every dependency a package.json declares is imported
// by that package, every package a file imports is declared, and every file and export is used.
// Each workspace's package.json `exports` and `scripts` are entries by themselves; the jest plugin
// adds the test files jest.config.js matches. What is listed below is what knip cannot see.
import type { KnipConfig } from 'knip';

const config: KnipConfig = {
  workspaces: {
    '.': {
      // The scripts start.sh and the README run, and the demo image's receiver and setup.
      entry: ['scripts/*.ts', 'infra/demo/*.mts'],
      // test/deploy/k8s.test.ts imports its models by a computed path, kubernetes-models/<group>.
      ignoreDependencies: ['kubernetes-models'],
    },
    'packages/*': {
      entry: ['test/**/*.test.ts'],
    },
    'packages/db': {
      // The migrations list imports each file as a namespace; kysely calls their up and down.
      entry: ['src/migrations/0*.ts', 'test/**/*.test.ts'],
    },
    'packages/sdk': {
      // package.json points at the built dist/; these are its sources, plus the build's scripts.
      entry: ['src/index.ts', 'scripts/*.ts', 'test/**/*.test.ts'],
    },
    'services/*': {
      entry: ['test/**/*.test.ts'],
    },
    'services/recorder': {
      // The recorder's own benchmark, started by hand.
      entry: ['test/**/*.test.ts', 'bench/*.ts'],
    },
    test: {
      // The benchmarks `pnpm bench:*` runs, and the processes and threads they start by path.
      entry: ['**/*.test.ts', 'bench/*.ts'],
      // bench/bare-api.ts requires express through the API's package, to run its very version.
      ignoreDependencies: ['express'],
    },
  },
  // Programs of the machine, not of node_modules: the tests make certificates and render manifests.
  ignoreBinaries: ['openssl', 'kubectl'],
};

export default config;
