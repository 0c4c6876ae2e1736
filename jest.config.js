// One approach for the whole repo: ESM jest (node --experimental-vm-modules) with @swc/jest stripping
// types. ESM because kysely and commander ship only as ES modules (so do got, in the SSRF guard's
// test, and kubernetes-models, in the deploy checks), which jest's CommonJS mode cannot load; swc
// because it is fast and needs no type check (tsc does that).
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
];

export default {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  // Node's, and a file that leaves a pool, connection, server or timer running fails.
  testEnvironment: '<rootDir>/packages/testkit/src/leak-check-environment.ts',
  testMatch: ['<rootDir>/{packages,services}/*/test/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/packages/testkit/src/global-setup.ts',
  testTimeout: 30_000,
  // Two cores: one worker per core keeps Postgres and RabbitMQ responsive for the tests' own clocks.
  maxWorkers: 2,
  // ESM jest loads every test file's module graph anew and keeps the old ones: a worker grew to
  // about 800 MB over the suite, and then took 550-650 ms to exit, past jest's 500 ms grace, so
  // every run ended with "a worker process has failed to exit gracefully" and no handle left
  // open. A worker past this after a file is replaced by a fresh one.
  workerIdleMemoryLimit: '400MB',
};
