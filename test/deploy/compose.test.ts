// docker-compose.yml, checked without a Docker engine: against the Compose Specification's JSON
// Schema (vendored in infra/schemas, see its README), and against the packages: each app service
// builds its own target of the Dockerfile, starts with its package's start script, sets only settings its
// config reads, with values that config accepts, and starts after the one-shot migrate.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { testImages } from '@trips/testkit';
import { parse } from 'yaml';
import {
  deployables,
  durationMs,
  imageCommand,
  readJson,
  readText,
  services,
  settingsRead,
  startCommand,
} from './helpers.ts';

function composeValidator() {
  // The schema declares draft 2019-09 and still carries the draft-04 `id` keyword (an annotation
  // here) and a custom `expose` format; its loose typing is not written for ajv's strictTypes.
  const ajv = new Ajv2019({ allErrors: true, strict: true, strictTypes: false, strictTuples: false });
  ajv.removeKeyword('id');
  ajv.addKeyword({ keyword: 'id', schemaType: 'string' });
  ajv.addFormat('expose', true);
  const validate = ajv.compile(readJson('infra/schemas/compose-spec.json'));
  return (doc: unknown): string[] =>
    validate(doc)
      ? []
      : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Compose resolves `<<` merge keys; duplicate keys are an error, as in Compose. */
const load = (text: string) => parse(text, { merge: true, uniqueKeys: true });

const composeText = readText('docker-compose.yml');
const compose = load(composeText);
const schemaProblems = composeValidator();

test('docker-compose.yml is valid against the Compose Specification', () => {
  expect(schemaProblems(compose)).toEqual([]);
});

describe('the schema check fails on a broken compose file', () => {
  test.each([
    [
      'an unknown service key',
      (c: any) => (c.services.api.restart_policy = 'always'),
      /additional properties.*restart_policy/,
    ],
    [
      'a misspelt depends_on condition',
      (c: any) => (c.services.api.depends_on.migrate.condition = 'service_completed'),
      /allowed values/,
    ],
    ['ports of the wrong type', (c: any) => (c.services.api.ports = 3000), /must be array/],
    ['an unknown top-level key', (c: any) => (c.service = {}), /additional properties/],
  ])('%s', (_what, breakIt, message) => {
    const broken = structuredClone(compose);
    breakIt(broken);
    expect(schemaProblems(broken).join('\n')).toMatch(message);
  });
});

const appServices = { ...Object.fromEntries(services.map((s) => [s, s])), migrate: 'migrate' } as Record<
  string,
  keyof typeof deployables
>;

describe.each(Object.keys(appServices))('compose service %s', (name) => {
  const d = deployables[appServices[name]!];
  const service = compose.services[name];
  const env: Record<string, string> = Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, String(v)]),
  );

  test('builds its own target of the Dockerfile from the repository root', () => {
    expect(service.build).toEqual({ context: '.', target: d.target });
    expect(service.image).toMatch(new RegExp(`^trips/${name}:`));
  });

  test("runs the image's command, which is the package's start script", () => {
    const cmd = imageCommand(d.target);
    expect(cmd).toEqual([...startCommand(d.pkgDir), ...d.extraArgs]);
    if (service.command !== undefined) expect(service.command).toEqual(cmd);
    expect(service.entrypoint).toBeUndefined();
  });

  test('sets only settings its config reads, each with a value the config accepts', () => {
    const known = settingsRead(d);
    expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
    for (const required of d.required) expect(env).toHaveProperty(required);
    // The dispatcher reads WEBHOOK_CA_FILE at start; the demo CA exists only in the compose volume.
    const dir = mkdtempSync(join(tmpdir(), 'trips-compose-'));
    try {
      const ca = join(dir, 'ca.pem');
      writeFileSync(ca, '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n');
      expect(() =>
        d.parse({ ...env, ...(env.WEBHOOK_CA_FILE ? { WEBHOOK_CA_FILE: ca } : {}) }),
      ).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('runs hardened: read-only root, no capabilities, no privilege escalation', () => {
    expect(service.read_only).toBe(true);
    expect(service.cap_drop).toEqual(['ALL']);
    expect(service.security_opt).toContain('no-new-privileges:true');
  });

  if (name === 'migrate') {
    test('is a one-shot after Postgres is healthy', () => {
      expect(service.restart).toBe('no');
      expect(service.depends_on.postgres.condition).toBe('service_healthy');
    });
    return;
  }

  test('starts after the migrate one-shot completed', () => {
    expect(service.depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
  });

  test('has a healthcheck on its own /readyz port', () => {
    const port = env[d.health!.env] ?? String(d.health!.default);
    expect(service.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${port}/readyz`);
  });

  test('is given longer to stop than its own graceful stop deadline', () => {
    const deadline = durationMs(env[d.stopDeadline!.env] ?? d.stopDeadline!.default);
    expect(durationMs(service.stop_grace_period)).toBeGreaterThan(deadline);
  });
});

test('the env check fails on a setting the service does not read', () => {
  const known = settingsRead(deployables.dispatcher);
  expect(known.has('WEBHOOK_TIMEOUT')).toBe(true);
  expect(known.has('WEBHOOK_TIMOUT')).toBe(false);
  expect(() => deployables.dispatcher.parse({ WEBHOOK_TIMEOUT: 'ten seconds' })).toThrow(/WEBHOOK_TIMEOUT/);
});

test('the dispatcher starts after the broker and the recorder after the dispatcher (queues first)', () => {
  expect(compose.services.dispatcher.depends_on.rabbitmq.condition).toBe('service_healthy');
  expect(compose.services.recorder.depends_on.dispatcher.condition).toBe('service_healthy');
});

test('the backing services and the demo pieces are there', () => {
  expect(compose.services.postgres.image).toMatch(/^postgres:(1[5-9]|[2-9]\d)/);
  expect(compose.services.rabbitmq.image).toMatch(/^rabbitmq:(4|3\.13).*management/);
  expect(compose.services.redis.healthcheck).toBeDefined();
  expect(compose.services.dispatcher.environment.SMTP_URL).toBe('smtp://mailpit:1025');
  expect(compose.services['demo-receiver'].image).toBe(compose.services['demo-setup'].image);
  expect(compose.services['demo-setup'].build).toEqual({ context: '.', target: 'demo' });
  expect(compose.services['demo-setup'].environment.DEMO_RECEIVER_URL).toMatch(/^https:\/\/demo-receiver:/);
});

// start.sh runs these four when the machine has no PostgreSQL, RabbitMQ or Redis, and the tests
// run the first three in containers (packages/testkit/src/services/): the same versions.
test('the infrastructure start.sh takes from compose, on the ports it expects; the tests use the same images', () => {
  const published = (name: string) => compose.services[name].ports as string[];
  expect(published('postgres')).toContain('127.0.0.1:5432:5432');
  expect(published('rabbitmq')).toContain('127.0.0.1:5672:5672');
  expect(published('redis')).toContain('127.0.0.1:6379:6379');
  expect(published('mailpit')).toContain('127.0.0.1:1025:1025');
  expect(compose.services.postgres.image).toBe(testImages.postgres);
  expect(compose.services.rabbitmq.image).toBe(`${testImages.rabbitmq}-management`);
  expect(compose.services.redis.image).toBe(testImages.redis);
});
