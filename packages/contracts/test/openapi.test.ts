import { readFileSync } from 'node:fs';
import {
  ERROR_CODES,
  SCHEMAS,
  openapiDocument as doc,
  validate,
  type Operation,
  type Parameter,
  type Ref,
  type Response,
} from '../src/index.ts';

const committed = JSON.parse(readFileSync(new URL('../openapi.json', import.meta.url), 'utf8'));

/** The node a local `$ref` points at, or undefined. */
function resolve(pointer: string): unknown {
  if (!pointer.startsWith('#/')) return undefined;
  return pointer
    .slice(2)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], doc);
}

function deref<T>(value: T | Ref): T {
  return '$ref' in (value as object) ? (resolve((value as Ref).$ref) as T) : (value as T);
}

function refsIn(value: unknown): string[] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, child]) =>
    key === '$ref' && typeof child === 'string' ? [child] : refsIn(child),
  );
}

const operations: [string, Operation][] = Object.entries(doc.paths).map(([path, item]) => [path, item.get!]);
const operation = (path: string) => doc.paths[path]!.get!;
const authenticated = operations.filter(([, op]) => op.security.length > 0);
const errorCodesOf = (op: Operation, status: string) =>
  Object.keys(deref<Response>(op.responses[status]!).content!['application/json']!.examples!);

test('the committed openapi.json is what the generator produces (run `pnpm --filter @trips/contracts generate`)', () => {
  expect(committed).toEqual(doc);
});

test('the document is OpenAPI 3.1 and reuses the very JSON Schemas the validator compiles', () => {
  expect(doc.openapi).toBe('3.1.0');
  expect(doc.info.title).toBeTruthy();
  expect(doc.info.version).toBeTruthy();
  expect(doc.components.schemas).toBe(SCHEMAS);
});

test('every $ref resolves', () => {
  const refs = refsIn(doc);
  expect(refs.length).toBeGreaterThan(50);
  expect(refs.filter((ref) => resolve(ref) === undefined)).toEqual([]);
});

test('it documents exactly the public endpoints, each with a unique operationId', () => {
  expect(Object.keys(doc.paths).sort()).toEqual([
    '/api/v1/contacts',
    '/api/v1/contacts/{id}',
    '/api/v1/events',
    '/api/v1/openapi.json',
    '/api/v1/payments',
    '/api/v1/payments/{id}',
    '/api/v1/trips',
    '/api/v1/trips/{id}',
  ]);
  for (const item of Object.values(doc.paths)) expect(Object.keys(item)).toEqual(['get']);
  const ids = operations.map(([, op]) => op.operationId);
  expect(new Set(ids).size).toBe(ids.length);
});

test.each([
  ['/api/v1/trips/{id}', 'trips:read', 'Trip'],
  ['/api/v1/trips', 'trips:read', 'TripList'],
  ['/api/v1/payments/{id}', 'payments:read', 'Payment'],
  ['/api/v1/payments', 'payments:read', 'PaymentList'],
  ['/api/v1/contacts/{id}', 'contacts:read', 'Contact'],
  ['/api/v1/contacts', 'contacts:read', 'ContactList'],
  ['/api/v1/events', 'events:read', 'EventList'],
])('GET %s needs %s and answers a %s', (path, scope, schema) => {
  const op = operation(path);
  expect(op.security).toEqual([{ bearerAuth: [scope] }]);
  expect(op.description).toContain(`\`${scope}\``);
  expect(deref<Response>(op.responses['200']!).content!['application/json']!.schema).toEqual({
    $ref: `#/components/schemas/${schema}`,
  });
});

test('the OpenAPI document itself needs no key', () => {
  expect(operation('/api/v1/openapi.json').security).toEqual([]);
  expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
});

test('every authenticated operation documents the errors of access checks, each with the Error schema', () => {
  for (const [path, op] of authenticated) {
    expect([path, errorCodesOf(op, '401')]).toEqual([path, ['unauthorized']]);
    expect([path, errorCodesOf(op, '403')]).toEqual([
      path,
      ['api_not_enabled', 'subscription_inactive', 'insufficient_scope'],
    ]);
    expect([path, errorCodesOf(op, '429')]).toEqual([path, ['rate_limited']]);
    expect([path, errorCodesOf(op, '500')]).toEqual([path, ['internal_error']]);
    expect([path, errorCodesOf(op, '503')]).toEqual([path, ['service_unavailable']]);
  }
});

test('retrievals answer 400 (any query parameter) and 404, lists 400, events 400 and 410, and nothing else', () => {
  const statuses = (path: string) => Object.keys(operation(path).responses).sort();
  for (const path of ['/api/v1/trips/{id}', '/api/v1/payments/{id}', '/api/v1/contacts/{id}']) {
    expect(statuses(path)).toEqual(['200', '400', '401', '403', '404', '429', '500', '503']);
    expect(errorCodesOf(operation(path), '400')).toEqual(['invalid_request']);
    expect(errorCodesOf(operation(path), '404')).toEqual(['not_found']);
  }
  for (const path of ['/api/v1/trips', '/api/v1/payments', '/api/v1/contacts']) {
    expect(statuses(path)).toEqual(['200', '400', '401', '403', '429', '500', '503']);
    expect(errorCodesOf(operation(path), '400')).toEqual(['invalid_request']);
  }
  expect(statuses('/api/v1/events')).toEqual(['200', '400', '401', '403', '410', '429', '500', '503']);
  expect(errorCodesOf(operation('/api/v1/events'), '410')).toEqual(['cursor_expired']);
  expect(statuses('/api/v1/openapi.json')).toEqual(['200', '500']);
});

test('every error response is an Error body whose examples conform, under the status of their code', () => {
  for (const [path, op] of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (status === '200') continue;
      const media = deref<Response>(response).content!['application/json']!;
      expect([path, status, media.schema]).toEqual([path, status, { $ref: '#/components/schemas/Error' }]);
      for (const [code, example] of Object.entries(media.examples!)) {
        expect([path, code, validate('Error', example.value)]).toEqual([path, code, []]);
        expect(ERROR_CODES[code as keyof typeof ERROR_CODES].status).toBe(Number(status));
      }
    }
  }
});

test('every response carries Request-Id; rate-limit headers after the limiter; Retry-After on 429 and 503', () => {
  for (const [path, op] of operations) {
    for (const [status, response] of Object.entries(op.responses)) {
      expect([path, status, Object.keys(deref<Response>(response).headers ?? {})]).toEqual([
        path,
        status,
        expect.arrayContaining(['Request-Id']),
      ]);
    }
  }
  for (const [, op] of authenticated) {
    expect(Object.keys(deref<Response>(op.responses['200']!).headers!)).toEqual([
      'Request-Id',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
    ]);
    expect(deref<Response>(op.responses['429']!).headers).toHaveProperty('Retry-After');
    expect(deref<Response>(op.responses['503']!).headers).toHaveProperty('Retry-After');
  }
});

test('query parameters carry the limits of D4 and D6', () => {
  const parameters = (path: string) =>
    Object.fromEntries(
      (operation(path).parameters ?? []).map((p) => deref<Parameter>(p)).map((p) => [p.name, p]),
    );
  for (const path of ['/api/v1/trips', '/api/v1/payments', '/api/v1/contacts']) {
    const { updated_since, limit, cursor } = parameters(path);
    expect(updated_since).toMatchObject({ in: 'query', schema: { type: 'string', format: 'date-time' } });
    expect(limit).toMatchObject({
      in: 'query',
      schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
    });
    expect(cursor).toMatchObject({ in: 'query', schema: { type: 'string' } });
  }
  const { after, limit, types } = parameters('/api/v1/events');
  expect(after).toMatchObject({ in: 'query', schema: { type: 'string' } });
  expect(limit).toMatchObject({ schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } });
  // style form + explode false is OpenAPI's spelling of `types=a,b`.
  expect(types).toMatchObject({ style: 'form', explode: false, schema: { type: 'array' } });
  for (const path of ['/api/v1/trips/{id}', '/api/v1/payments/{id}', '/api/v1/contacts/{id}']) {
    expect(parameters(path).id).toMatchObject({ in: 'path', required: true });
  }
});

test('the webhook describes the signed delivery POST of an Event', () => {
  const delivery = doc.webhooks.event!.post!;
  const headers = (delivery.parameters ?? []).map((p) => deref<Parameter>(p));
  expect(headers.filter((p) => p.in === 'header' && p.required).map((p) => p.name)).toEqual(
    expect.arrayContaining([
      'Service-Signature',
      'Service-Event-Id',
      'Service-Event-Type',
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]),
  );
  expect(delivery.requestBody!.content['application/json']!.schema).toEqual({
    $ref: '#/components/schemas/Event',
  });
  expect(delivery.security).toEqual([]);
  expect(Object.keys(delivery.responses)).toEqual(['2XX']);
  const signature = headers.find((p) => p.name === 'Service-Signature')!;
  const pattern = new RegExp(signature.schema.pattern as string);
  expect(pattern.test(`t=1795000000,v1=${'a'.repeat(64)}`)).toBe(true);
  expect(pattern.test(`t=1795000000,v1=${'a'.repeat(64)},v1=${'b'.repeat(64)}`)).toBe(true);
  expect(pattern.test('v1=abc')).toBe(false);
  const standard = new RegExp(headers.find((p) => p.name === 'webhook-signature')!.schema.pattern as string);
  const v1 = `v1,${'A'.repeat(43)}=`;
  const v1a = `v1a,${'B'.repeat(86)}==`;
  for (const header of [v1, `${v1} ${v1}`, `${v1} ${v1a}`, `${v1} ${v1} ${v1a} ${v1a}`])
    expect(standard.test(header)).toBe(true);
  for (const header of [v1a, `${v1a} ${v1}`, 'v1,abc', `${v1} `]) expect(standard.test(header)).toBe(false);
});
