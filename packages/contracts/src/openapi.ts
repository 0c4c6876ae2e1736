import { ERROR_CODES, type ErrorCode } from './errors.ts';
import { ID_PREFIXES, idPattern } from './ids.ts';
import { API_BASE_PATH, OBJECTS, OBJECT_TYPES, type ObjectType } from './objects.ts';
import { SCHEMAS, type JsonSchema } from './schemas.ts';
import { EVENTS_SCOPE, SCOPES, type Scope } from './scopes.ts';

// The OpenAPI 3.1 document, built from the same tables and schemas as everything else rather than
// written by hand, so it cannot promise an endpoint, scope or error code the code does not know.
// scripts/write-openapi.ts writes it to openapi.json; a test keeps the file equal to this object.

export type Ref = {
  $ref: string;
};
export interface Header {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}
export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  description: string;
  required?: boolean;
  schema: JsonSchema;
  style?: 'form';
  explode?: boolean;
}
export interface Example {
  summary: string;
  value: unknown;
}
export interface MediaType {
  schema: JsonSchema;
  examples?: Record<string, Example>;
}
export interface Response {
  description: string;
  headers?: Record<string, Header | Ref>;
  content?: Record<string, MediaType>;
}
export interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Record<string, Scope[]>[];
  parameters?: (Parameter | Ref)[];
  requestBody?: { description: string; required: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response | Ref>;
}
export type PathItem = Partial<Record<'get' | 'post', Operation>>;
export interface OpenApiDocument {
  openapi: '3.1.0';
  jsonSchemaDialect: string;
  info: { title: string; version: string; summary: string; description: string };
  servers: { url: string; description: string }[];
  tags: { name: string; description: string }[];
  security: Record<string, Scope[]>[];
  paths: Record<string, PathItem>;
  webhooks: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    parameters: Record<string, Parameter>;
    headers: Record<string, Header>;
    responses: Record<string, Response>;
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer'; description: string }>;
  };
}

const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Ref => ({
  $ref: `#/components/${kind}/${name}`,
});

const capitalized = (word: string) => word[0]!.toUpperCase() + word.slice(1);

type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]['status'];

/** Component names of the error responses, after their HTTP reason phrases. */
const ERROR_RESPONSE_NAMES: Record<ErrorStatus, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  410: 'Gone',
  429: 'TooManyRequests',
  500: 'InternalServerError',
};

/** A sample message per code, for the examples readers copy from. */
const EXAMPLE_MESSAGES: Record<ErrorCode, string> = {
  unauthorized: 'The API key is missing, malformed, unknown or revoked.',
  api_not_enabled: 'API access is not enabled for this agency.',
  subscription_inactive: "This agency's trial or subscription is not active.",
  insufficient_scope: "This operation needs the scope 'trips:read'.",
  rate_limited: 'Too many requests; retry after the number of seconds in Retry-After.',
  invalid_request: "'limit' must be a whole number from 1 to 200.",
  not_found: "No trip 'trp_x' in this agency.",
  method_not_allowed: 'POST is not allowed here; use GET.',
  cursor_expired: 'This cursor is older than the 30 days of kept events; resync with updated_since.',
  internal_error: 'Something went wrong on our side; retry later.',
};

/** Every authenticated operation can fail these ways, in the order the API checks them (D1). */
const ACCESS_ERRORS: ErrorCode[] = [
  'unauthorized',
  'api_not_enabled',
  'subscription_inactive',
  'insufficient_scope',
  'rate_limited',
  'internal_error',
];
// A retrieval takes no query parameters: any is a 400 naming it.
const RETRIEVE_ERRORS: ErrorCode[] = [...ACCESS_ERRORS, 'invalid_request', 'not_found'];
const LIST_ERRORS: ErrorCode[] = [...ACCESS_ERRORS, 'invalid_request'];
const EVENTS_ERRORS: ErrorCode[] = [...LIST_ERRORS, 'cursor_expired'];
// The document itself is public, like the page that renders it: no key, so no key-based errors.
const DOCUMENT_ERRORS: ErrorCode[] = ['internal_error'];

// Rate-limit headers come with every response that got past the rate limiter (D3): successes and
// the errors found after it. Errors found before it (401, 403) and 500s may lack them.
const RATE_LIMITED_STATUSES = new Set<number>([200, 400, 404, 410, 429]);

function headersFor(status: number): Record<string, Ref> {
  const headers: Record<string, Ref> = { 'Request-Id': ref('headers', 'Request-Id') };
  if (RATE_LIMITED_STATUSES.has(status)) {
    headers['RateLimit-Limit'] = ref('headers', 'RateLimit-Limit');
    headers['RateLimit-Remaining'] = ref('headers', 'RateLimit-Remaining');
    headers['RateLimit-Reset'] = ref('headers', 'RateLimit-Reset');
  }
  if (status === 429) headers['Retry-After'] = ref('headers', 'Retry-After');
  return headers;
}

function errorResponse(status: ErrorStatus, codes: ErrorCode[]): Response {
  return {
    description: codes.map((code) => `\`${code}\`: ${ERROR_CODES[code].when}`).join('\n\n'),
    headers: headersFor(status),
    content: {
      'application/json': {
        schema: ref('schemas', 'Error'),
        examples: Object.fromEntries(
          codes.map((code) => [
            code,
            {
              summary: ERROR_CODES[code].when,
              value: {
                error: {
                  code,
                  message: EXAMPLE_MESSAGES[code],
                  request_id: `${ID_PREFIXES.request}7HkP2sLq9ZxC4vBn`,
                  ...(code === 'invalid_request' ? { param: 'limit' } : {}),
                },
              },
            },
          ]),
        ),
      },
    },
  };
}

function errorStatuses(codes: ErrorCode[]): ErrorStatus[] {
  return [...new Set(codes.map((code) => ERROR_CODES[code].status))].sort((a, b) => a - b);
}

/** Error responses are shared components: one per status, listing every code of that status any operation can answer. */
function errorResponseComponents(): Record<string, Response> {
  const all = [...new Set([...RETRIEVE_ERRORS, ...EVENTS_ERRORS, ...DOCUMENT_ERRORS])];
  return Object.fromEntries(
    errorStatuses(all).map((status) => [
      ERROR_RESPONSE_NAMES[status],
      errorResponse(
        status,
        all.filter((code) => ERROR_CODES[code].status === status),
      ),
    ]),
  );
}

function responses(success: Response, errors: ErrorCode[]): Record<string, Response | Ref> {
  const result: Record<string, Response | Ref> = { '200': success };
  for (const status of errorStatuses(errors))
    result[String(status)] = ref('responses', ERROR_RESPONSE_NAMES[status]);
  return result;
}

function ok(description: string, schema: JsonSchema | Ref): Response {
  return { description, headers: headersFor(200), content: { 'application/json': { schema } } };
}

const needs = (scope: Scope) => [{ bearerAuth: [scope] }];

/** What a developer must know about one object type beyond its schema. */
const OBJECT_NOTES: Record<ObjectType, string> = {
  trip: 'Templates are not trips: they are never returned. `travelers.non_golfers` is a number when the trip has an itinerary, otherwise null.',
  payment: 'Only payments shown to the client exist here: drafts and cancelled payments answer 404.',
  contact: '`trip_ids` lists the trips the contact takes part in.',
};

function objectPaths(type: ObjectType): Record<string, PathItem> {
  const { collection, scope } = OBJECTS[type];
  const name = capitalized(type);
  const tag = capitalized(collection);
  return {
    [`${API_BASE_PATH}/${collection}/{id}`]: {
      get: {
        operationId: `retrieve${name}`,
        summary: `Retrieve a ${type}`,
        description: `Returns the ${type} with this id. An id of another agency answers 404, exactly like an id that does not exist. ${OBJECT_NOTES[type]} Requires the scope \`${scope}\`.`,
        tags: [tag],
        security: needs(scope),
        parameters: [ref('parameters', `${name}Id`)],
        responses: responses(ok(`The ${type}.`, ref('schemas', name)), RETRIEVE_ERRORS),
      },
    },
    [`${API_BASE_PATH}/${collection}`]: {
      get: {
        operationId: `list${tag}`,
        summary: `List ${collection}`,
        description:
          `Returns the ${collection} of the agency with \`updated_at\` at or after \`updated_since\`, ordered by \`(updated_at, id)\` ascending. ` +
          `To stay in sync, keep the \`updated_at\` of the last ${type} you saw and pass it as \`updated_since\` next time; within one listing follow \`next_cursor\` with \`cursor\`. ` +
          `${OBJECT_NOTES[type]}${type === 'trip' ? ' In lists `travelers.non_golfers` is always null: retrieve the trip for it.' : ''} Requires the scope \`${scope}\`.`,
        tags: [tag],
        security: needs(scope),
        parameters: [
          ref('parameters', 'UpdatedSince'),
          ref('parameters', 'Limit'),
          ref('parameters', 'Cursor'),
        ],
        responses: responses(ok(`A page of ${collection}.`, ref('schemas', `${name}List`)), LIST_ERRORS),
      },
    },
  };
}

const eventsPath: Record<string, PathItem> = {
  [`${API_BASE_PATH}/events`]: {
    get: {
      operationId: 'listEvents',
      summary: 'List events',
      description:
        'Returns the events after the cursor `after`, oldest first; without `after`, reading starts at the oldest kept event (events are kept 30 days). ' +
        '`next_cursor` is never null: store it and pass it as `after` next time, even when the page is empty. A cursor never skips an event, even while events are being recorded. ' +
        'Only events whose object the key may read are returned: `trip.*` needs `trips:read`, `payment.*` `payments:read`, `contact.*` `contacts:read`. ' +
        `Requires the scope \`${EVENTS_SCOPE}\`. A cursor older than the kept window answers 410 \`cursor_expired\`: resync with the lists' \`updated_since\`.`,
      tags: ['Events'],
      security: needs(EVENTS_SCOPE),
      parameters: [ref('parameters', 'After'), ref('parameters', 'EventLimit'), ref('parameters', 'Types')],
      responses: responses(ok('A page of events.', ref('schemas', 'EventList')), EVENTS_ERRORS),
    },
  },
};

const documentPath: Record<string, PathItem> = {
  [`${API_BASE_PATH}/openapi.json`]: {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'Get this OpenAPI document',
      description: 'Returns this document. It needs no key.',
      tags: ['Meta'],
      security: [],
      responses: responses(
        {
          description: 'The OpenAPI 3.1 document of this API.',
          headers: { 'Request-Id': ref('headers', 'Request-Id') },
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        DOCUMENT_ERRORS,
      ),
    },
  },
};

const webhooks: Record<string, PathItem> = {
  event: {
    post: {
      operationId: 'receiveEvent',
      summary: 'Receive an event',
      description:
        'The service POSTs each event as JSON to every webhook subscribed to its type. Answer any 2xx within 10 seconds; redirects are not followed and count as failures. ' +
        'Failed deliveries are retried after 1 minute, 5 minutes, 30 minutes, 2 hours, 6 hours and then every 24 hours, for three days; a webhook failing for three days in a row is switched off and the owners are e-mailed. ' +
        'Events may arrive more than once and out of order: deduplicate by `Service-Event-Id` and read the object from the API. ' +
        'Verify `Service-Signature` before trusting the body: it is `t=<unix seconds>,v1=<hex HMAC-SHA256>` of `<t>.<raw body>` keyed with the UTF-8 bytes of the whole webhook secret, one `v1` per active secret while one is being rotated; reject a `t` older than 5 minutes.',
      tags: ['Webhooks'],
      // Deliveries are authenticated by their signature, not by a bearer key.
      security: [],
      parameters: [
        {
          name: 'Service-Signature',
          in: 'header',
          required: true,
          description: 'The signature of this attempt: `t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=…]`.',
          schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
        },
        {
          name: 'Service-Event-Id',
          in: 'header',
          required: true,
          description: 'The id of the event; the same on every attempt.',
          schema: { type: 'string', pattern: idPattern('event') },
        },
        {
          name: 'Service-Event-Type',
          in: 'header',
          required: true,
          description: 'The type of the event.',
          schema: ref('schemas', 'EventType'),
        },
        {
          name: 'User-Agent',
          in: 'header',
          required: true,
          description: 'Identifies the sender.',
          schema: { const: 'TripService-Webhooks/1' },
        },
      ],
      requestBody: {
        description: 'The event.',
        required: true,
        content: { 'application/json': { schema: ref('schemas', 'Event') } },
      },
      responses: {
        '2XX': { description: 'Acknowledged. Any other answer, or none within 10 seconds, is retried.' },
      },
    },
  },
};

const queryParameters: Record<string, Parameter> = {
  UpdatedSince: {
    name: 'updated_since',
    in: 'query',
    description: 'Only objects with `updated_at` at or after this time.',
    schema: { type: 'string', format: 'date-time', examples: ['2026-11-21T10:15:30.123Z'] },
  },
  Limit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  },
  Cursor: {
    name: 'cursor',
    in: 'query',
    description: 'The `next_cursor` of the previous page.',
    schema: { type: 'string', minLength: 1 },
  },
  After: {
    name: 'after',
    in: 'query',
    description: 'The `next_cursor` of the previous call; only events after it are returned.',
    schema: { type: 'string', minLength: 1 },
  },
  EventLimit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
  Types: {
    name: 'types',
    in: 'query',
    description: 'Only events of these types, as a comma-separated list, e.g. `trip.created,trip.deleted`.',
    style: 'form',
    explode: false,
    schema: { type: 'array', items: ref('schemas', 'EventType'), minItems: 1 },
  },
};

const idParameters: Record<string, Parameter> = Object.fromEntries(
  OBJECT_TYPES.map((type) => [
    `${capitalized(type)}Id`,
    {
      name: 'id',
      in: 'path',
      required: true,
      description: `The id of the ${type}.`,
      schema: { type: 'string', examples: [`${OBJECTS[type].idPrefix}4kXq9ZtR2mB7nW1c`] },
    },
  ]),
);

const headers: Record<string, Header> = {
  'Request-Id': {
    description: 'Identifies this request; equal to `error.request_id` in an error. Quote it to support.',
    required: true,
    schema: { type: 'string', pattern: idPattern('request') },
  },
  'RateLimit-Limit': {
    description: 'Requests the key may burst (the bucket size).',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left before the key is limited.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the bucket is full again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
};

const description = `Read the trips, payments and contacts of one agency, and follow every change to them as events, read with \`GET /events\` or received as signed webhooks.

Authenticate every call with \`Authorization: Bearer <API_KEY>\`. A key belongs to one agency, sees only that agency's objects, and carries scopes: ${SCOPES.map((scope) => `\`${scope}\``).join(', ')}.

Every error is JSON, \`{"error": {"code", "message", "request_id", "param"?}}\`, with a stable \`code\`. Checks run in this order and the first that fails answers: 401 \`unauthorized\`, 403 \`api_not_enabled\`, 403 \`subscription_inactive\`, 403 \`insufficient_scope\`, 429 \`rate_limited\`, 400 \`invalid_request\`, 404 \`not_found\`. Unknown paths under ${API_BASE_PATH} answer 404 \`not_found\`, and a known path with another method 405 \`method_not_allowed\`.

Every response carries \`Request-Id\`. Limits are per key, a token bucket reported in \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; a 429 adds \`Retry-After\`.

Ids are opaque strings with a type prefix (${Object.values(OBJECTS)
  .map(({ idPrefix }) => `\`${idPrefix}\``)
  .join(
    ', ',
  )}, \`${ID_PREFIXES.event}\`). Timestamps are ISO 8601 UTC with milliseconds; dates are \`YYYY-MM-DD\`.`;

export const openapiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  info: {
    title: 'Trip Planning Service API',
    version: '1',
    summary: 'Trips, payments, contacts and their events, for an agency’s own software.',
    description,
  },
  // Relative: the document is served by the API itself, so its own host is the server.
  servers: [{ url: '/', description: 'The host serving this document.' }],
  tags: [
    { name: 'Trips', description: 'The trips an agency plans for its clients.' },
    { name: 'Payments', description: 'Payments shown to clients.' },
    { name: 'Contacts', description: 'The people trips are planned for.' },
    { name: 'Events', description: 'Every change to trips, payments and contacts, kept for 30 days.' },
    { name: 'Webhooks', description: 'Events delivered to an HTTPS endpoint an owner registered.' },
    { name: 'Meta', description: 'About the API itself.' },
  ],
  security: [{ bearerAuth: [] }],
  paths: Object.assign({}, ...OBJECT_TYPES.map(objectPaths), eventsPath, documentPath),
  webhooks,
  components: {
    schemas: SCHEMAS,
    parameters: { ...idParameters, ...queryParameters },
    headers,
    responses: errorResponseComponents(),
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: 'An API key of the agency, `tps_…`, created by an owner in the API settings.',
      },
    },
  },
};
