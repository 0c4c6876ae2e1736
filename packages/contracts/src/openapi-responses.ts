import { ERROR_CODES, type ErrorCode } from './errors.ts';
import { ID_PREFIXES } from './ids.ts';
import { ref } from './openapi-names.ts';
import type { Ref, Response } from './openapi-types.ts';
import type { JsonSchema } from './schemas.ts';

// The operations' responses: a success with its headers, and the errors each kind of operation can
// answer, shared as one component per status.

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
  503: 'ServiceUnavailable',
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
  service_unavailable:
    'The service is briefly unavailable; retry after the number of seconds in Retry-After.',
};

/** Every authenticated operation can fail these ways, in the order the API checks them (D1). */
const ACCESS_ERRORS: ErrorCode[] = [
  'unauthorized',
  'api_not_enabled',
  'subscription_inactive',
  'insufficient_scope',
  'rate_limited',
  'internal_error',
  'service_unavailable',
];
// A retrieval takes no query parameters: any is a 400 naming it.
export const RETRIEVE_ERRORS: ErrorCode[] = [...ACCESS_ERRORS, 'invalid_request', 'not_found'];
export const LIST_ERRORS: ErrorCode[] = [...ACCESS_ERRORS, 'invalid_request'];
export const EVENTS_ERRORS: ErrorCode[] = [...LIST_ERRORS, 'cursor_expired'];
// The document itself is public, like the page that renders it: no key, so no key-based errors.
export const DOCUMENT_ERRORS: ErrorCode[] = ['internal_error'];

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
  if (status === 429 || status === 503) headers['Retry-After'] = ref('headers', 'Retry-After');
  if (status === 401) headers['WWW-Authenticate'] = ref('headers', 'WWW-Authenticate');
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
export function errorResponseComponents(): Record<string, Response> {
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

export function responses(success: Response, errors: ErrorCode[]): Record<string, Response | Ref> {
  const result: Record<string, Response | Ref> = { '200': success };
  for (const status of errorStatuses(errors))
    result[String(status)] = ref('responses', ERROR_RESPONSE_NAMES[status]);
  return result;
}

export function ok(description: string, schema: JsonSchema | Ref): Response {
  return { description, headers: headersFor(200), content: { 'application/json': { schema } } };
}
