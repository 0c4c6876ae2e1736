// One approach for the whole repo: ESM jest (node --experimental-vm-modules) with @swc/jest stripping
// types. ESM because got is ESM-only; swc because it is fast and needs no type check (tsc does that).
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } },
];

export default {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  testEnvironment: 'node',
  testMatch: ['<rootDir>/{packages,services}/*/test/**/*.test.ts', '<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/packages/testkit/src/global-setup.ts',
  testTimeout: 30_000,
  // Two cores: one worker per core keeps Postgres and RabbitMQ responsive for the tests' own clocks.
  maxWorkers: 2,
};
