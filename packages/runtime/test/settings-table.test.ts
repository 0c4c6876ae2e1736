import { EnvReader, type ConfigError } from '../src/env.ts';
import { SETTING_SECTIONS, SETTINGS, type ReadableName, type Setting } from '../src/settings-table/index.ts';

// The settings table (src/settings-table/) is where every default and value rule is written once;
// EnvReader.read parses by it. Its rows must hold together: each default is a value its own rule
// accepts, each name is in one section only, and each meaning is one sentence for the docs.

const rows = Object.entries(SETTINGS as Record<string, Setting>);
const readable = rows.filter(([, row]) => row.kind !== 'external') as [ReadableName, Setting][];

function problemsOf(source: Record<string, string>, name: ReadableName): string[] {
  const env = new EnvReader(source);
  env.read(name);
  try {
    env.done();
    return [];
  } catch (error) {
    return (error as ConfigError).problems;
  }
}

test('each default, written out, is accepted and reads as the default itself', () => {
  for (const [name, row] of readable) {
    if (!('default' in row) || row.default === undefined || row.default === '') continue;
    const written = { [name]: String(row.default) };
    expect([name, problemsOf(written, name)]).toEqual([name, []]);
    expect([name, new EnvReader(written).read(name)]).toEqual([name, new EnvReader({}).read(name)]);
  }
});

test('each name is in one section, and each meaning is one sentence', () => {
  const sections = Object.values(SETTING_SECTIONS).flatMap((section) => Object.keys(section));
  expect(sections.length).toBe(rows.length);
  for (const [name, row] of rows) {
    expect([name, /^[A-Z`]/.test(row.meaning) && row.meaning.endsWith('.')]).toEqual([name, true]);
    expect([name, /\. [A-Z]/.test(row.meaning)]).toEqual([name, false]);
  }
});

test.each([
  [
    'LOG_LEVEL',
    'loud',
    "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got 'loud')",
  ],
  ['RATE_LIMIT_STORE', 'memcached', "RATE_LIMIT_STORE must be redis or postgres (got 'memcached')"],
  ['PORT', '70000', "PORT must be a whole number from 0 to 65535 (got '70000')"],
  ['OTEL_TRACES_SAMPLER_ARG', 'half', "OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got 'half')"],
  [
    'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
    'yes',
    "WEBHOOK_ALLOW_PRIVATE_NETWORKS must be true or false (got 'yes')",
  ],
  ['WEBHOOK_TIMEOUT', '0s', 'WEBHOOK_TIMEOUT: durations must be greater than zero'],
  ['REDIS_URL', 'http://cache:6379', 'REDIS_URL must use redis: or rediss: (got http:)'],
] as const)('%s=%s is refused, naming the variable: %s', (name, value, problem) => {
  expect(problemsOf({ [name]: value }, name)).toEqual([problem]);
});

test('a refused value reads as the default meanwhile, so every problem is collected in one round', () => {
  const env = new EnvReader({ PORT: 'eighty', EVENT_RETENTION: 'a month' });
  expect([env.read('PORT'), env.read('EVENT_RETENTION')]).toEqual([3000, 30 * 86_400_000]);
  expect(() => env.done()).toThrow(
    /PORT must be a whole number[^]*EVENT_RETENTION: 'a month' is not a duration/,
  );
});

test('blank is unset, and true and false take any case', () => {
  const env = new EnvReader({
    AMQP_PREFIX: '  ',
    OTEL_SDK_DISABLED: 'TRUE',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'False',
  });
  expect(env.isSet('AMQP_PREFIX')).toBe(false);
  expect(env.read('AMQP_PREFIX')).toBe('');
  expect(env.read('OTEL_SDK_DISABLED')).toBe(true);
  expect(env.read('WEBHOOK_ALLOW_PRIVATE_NETWORKS')).toBe(false);
  env.done();
});
