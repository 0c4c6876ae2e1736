import pino from 'pino';
import { createLogger } from '@trips/runtime';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { accessLineWriter, type AccessFields } from '../src/http/access-log.ts';
import { agencyWithKey, client, insertTrip, startTestApi } from './support.ts';

const capture = () => {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
};
const sameTime = (line: string) => line.replace(/"time":\d+/, '"time":0');

const fields: AccessFields = {
  requestId: 'req_AbCdEfGhIjKlMnOp',
  method: 'GET',
  path: '/api/v1/trips/trp_123',
  status: 200,
  ms: 1.234,
  keyId: 'key_42',
};

test('the hand-built line is the very line pino writes for the same fields', () => {
  const { lines, destination } = capture();
  const logger = createLogger('api', 'info', destination);
  const write = accessLineWriter(logger);
  for (const f of [fields, { ...fields, keyId: undefined, status: 401, ms: 0.5 }]) {
    write(f);
    logger.child({}, { redact: [] }).info(f, 'request');
  }
  expect(lines).toHaveLength(4);
  expect(sameTime(lines[0]!)).toBe(sameTime(lines[1]!));
  expect(sameTime(lines[2]!)).toBe(sameTime(lines[3]!));
  expect(lines[2]).not.toContain('keyId');
  const parsed = JSON.parse(lines[0]!);
  expect(parsed).toEqual({
    level: 30,
    time: expect.any(Number),
    pid: process.pid,
    hostname: expect.any(String),
    name: 'api',
    ...fields,
    msg: 'request',
  });
  expect(Math.abs(parsed.time - Date.now())).toBeLessThan(5_000);
});

test('every string is escaped as JSON: quotes, backslashes, control and non-ASCII characters', () => {
  const { lines, destination } = capture();
  const write = accessLineWriter(createLogger('api', 'info', destination));
  const path = '/a"b\\c\n\r\t\u0000\u001f\u2028é😀';
  const method = 'G"T\n';
  write({ ...fields, path, method, keyId: 'k"\\' });
  expect(lines).toHaveLength(1);
  // One line: no raw line break before its end.
  expect(lines[0]!.indexOf('\n')).toBe(lines[0]!.length - 1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ path, method, keyId: 'k"\\' });
});

test('the line follows the logger level, also when it changes at run time', () => {
  const { lines, destination } = capture();
  const logger = createLogger('api', 'warn', destination);
  const write = accessLineWriter(logger);
  write(fields);
  expect(lines).toHaveLength(0);
  logger.level = 'info';
  write(fields);
  expect(lines).toHaveLength(1);
  logger.level = 'silent';
  write(fields);
  expect(lines).toHaveLength(1);
});

test("the services' own loggers take the hand-built path, not pino's", () => {
  const logger = createLogger('api', 'info', capture().destination);
  let children = 0;
  const child = logger.child.bind(logger);
  logger.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof child;
  accessLineWriter(logger)(fields);
  expect(children).toBe(0);
});

test('a logger set up differently gets its lines from pino itself', () => {
  const { lines, destination } = capture();
  const logger = pino({ name: 'api', messageKey: 'message' }, destination);
  accessLineWriter(logger)(fields);
  expect(JSON.parse(lines[0]!)).toMatchObject({ ...fields, message: 'request' });
});

describe('through the API', () => {
  let t: TestDatabase;
  let api: Awaited<ReturnType<typeof startTestApi>>;
  beforeAll(async () => {
    t = await createTestDatabase();
    api = await startTestApi(t);
  });
  afterAll(async () => {
    await api.stop();
    await t.drop();
  });

  test('one line per request with its id, method, whole path, status, duration and key id', async () => {
    const own = await agencyWithKey(t.db);
    const trip = await insertTrip(t.db, own.agencyId);
    const ok = await client(api.url, own.key)(`/api/v1/trips/${trip.id}?`);
    const refused = await client(api.url)('/api/v1/trips/x%22y');
    const lines = api.logs.lines
      .flatMap((chunk) => chunk.split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'request');
    const of = (id: string | null) => lines.filter((line) => line.requestId === id);
    expect(of(ok.headers.get('request-id'))).toEqual([
      expect.objectContaining({
        method: 'GET',
        path: `/api/v1/trips/${trip.id}`,
        status: 200,
        ms: expect.any(Number),
        keyId: own.keyId,
      }),
    ]);
    const [line] = of(refused.headers.get('request-id'));
    expect(line).toMatchObject({ method: 'GET', path: '/api/v1/trips/x%22y', status: 401 });
    expect(line).not.toHaveProperty('keyId');
    expect(JSON.stringify(lines)).not.toContain(own.key);
  });
});

describe('a key or secret pasted into a path is never written', () => {
  let t: TestDatabase;
  let api: Awaited<ReturnType<typeof startTestApi>>;
  beforeAll(async () => {
    t = await createTestDatabase();
    api = await startTestApi(t);
  });
  afterAll(async () => {
    await api.stop();
    await t.drop();
  });

  test("the access log's path keeps the prefix and redacts the rest, wherever it was pasted", async () => {
    const own = await agencyWithKey(t.db);
    const secret = `whsec_${'Ab3_-'.repeat(8)}xyz`;
    const paths = [
      `/api/v1/trips/${own.key}`,
      `/api/v1/${own.key}/trips`,
      `/api/v1/trips/Bearer%20${own.key}`,
      `/settings/webhooks/${secret}`,
      `/nowhere/${secret}/x`,
    ];
    const requestIds = [];
    for (const path of paths) {
      const res = await client(api.url, own.key)(path, { redirect: 'manual' });
      requestIds.push(res.headers.get('request-id'));
    }
    const lines = api.logs.lines
      .flatMap((chunk) => chunk.split('\n').filter(Boolean))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === 'request');
    expect(requestIds.map((id) => lines.find((line) => line.requestId === id)?.path)).toEqual([
      '/api/v1/trips/tps_…[redacted]',
      '/api/v1/tps_…[redacted]/trips',
      '/api/v1/trips/Bearer%20tps_…[redacted]',
      '/settings/webhooks/whsec_…[redacted]',
      '/nowhere/whsec_…[redacted]/x',
    ]);
    expect(api.logs.text()).not.toContain(own.key.slice(4));
    expect(api.logs.text()).not.toContain(secret.slice(6));
  });
});
