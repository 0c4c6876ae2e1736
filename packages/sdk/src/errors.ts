import type { ErrorCode } from './openapi-types.ts';

/**
 * What the client itself can tell went wrong when the API gave no answer to classify:
 * no connection, no answer in time, or an answer that is not the API's JSON.
 */
export type ClientErrorCode = 'connection_error' | 'timeout' | 'invalid_response';

export interface TripServiceErrorInit {
  status: number;
  code: ErrorCode | ClientErrorCode;
  message: string;
  requestId?: string | undefined;
  param?: string | undefined;
  retryAfterSeconds?: number | undefined;
  cause?: unknown;
}

/**
 * Every failed call rejects with this one class. `code` is the API's D1 code (`not_found`,
 * `cursor_expired` …) or one of the client's own for calls that got no usable answer; `status`
 * is 0 then. Quote `requestId` to support.
 */
export class TripServiceError extends Error {
  override readonly name = 'TripServiceError';
  readonly status: number;
  readonly code: ErrorCode | ClientErrorCode;
  readonly requestId: string | undefined;
  /** With `invalid_request`: the query parameter at fault. */
  readonly param: string | undefined;
  /** With `rate_limited`: the seconds the API asked to wait (Retry-After). */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: TripServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.param = init.param;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** Which check of a webhook delivery failed. */
export type WebhookVerificationReason =
  | 'body_not_raw'
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'no_matching_signature'
  | 'invalid_body';

/** Thrown by verifyWebhook: `reason` says which check failed, `message` says what to do. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}
