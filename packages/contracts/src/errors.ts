/**
 * Every error code of the API with its HTTP status, in one table (interface.md 7 and
 * decisions.md D1). The API's error mapping imports this, so a code can never be answered with
 * two different statuses. Rows are in the order the API checks them (D1), then the rest.
 */
export const ERROR_CODES = {
  unauthorized: {
    status: 401,
    when: 'No key, a malformed key, or a key that does not exist or was revoked.',
  },
  api_not_enabled: { status: 403, when: 'API access is not turned on for the agency.' },
  subscription_inactive: { status: 403, when: "The agency's trial expired or its subscription ended." },
  insufficient_scope: { status: 403, when: 'The key lacks the scope the operation needs.' },
  rate_limited: { status: 429, when: 'Too many requests; Retry-After gives the seconds to wait.' },
  invalid_request: {
    status: 400,
    when: 'A bad query parameter or cursor, or a value holding a control character; `param` names it.',
  },
  not_found: { status: 404, when: 'No object with that id in the agency, or no such path under /api/v1.' },
  method_not_allowed: { status: 405, when: 'The path exists but not with this HTTP method.' },
  cursor_expired: {
    status: 410,
    when: 'The `after` cursor is older than the retention window: events were lost to this reader; resync with `updated_since`.',
  },
  internal_error: { status: 500, when: 'A failure on the service side; retry later.' },
  service_unavailable: {
    status: 503,
    when: 'The database is briefly out of reach (a failover); Retry-After gives the seconds to wait.',
  },
} as const satisfies Record<string, { status: number; when: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[];
