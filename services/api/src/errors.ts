import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ERROR_CODES, type ErrorCode } from '@trips/contracts';
import { isDatabaseUnavailable } from '@trips/db';
import { atMostEvery, type Logger } from '@trips/runtime';
import { redactCredentials } from './http/redact.ts';
import { sendJson } from './http/send-json.ts';

/** The one error type of the API: a code from the contract's table, a message for humans. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  constructor(code: ErrorCode, message: string, param?: string) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.param = param;
  }
}

export const invalidParam = (param: string, message: string) =>
  new ApiError('invalid_request', message, param);

/** For a known path asked with another method than GET (or HEAD, which Express answers as GET). */
export const methodNotAllowed: RequestHandler = (req, res) => {
  res.setHeader('Allow', 'GET, HEAD');
  throw new ApiError('method_not_allowed', `${req.method} is not allowed here; use GET.`);
};

/** D1's error body. */
export function errorBody(error: ApiError, requestId: string) {
  return {
    error: {
      code: error.code,
      message: error.message,
      request_id: requestId,
      ...(error.param !== undefined && { param: error.param }),
    },
  };
}

/** Writes the D1 error body; the status always comes from the contract's table. */
function sendError(res: Response, error: ApiError): void {
  const requestId = String(res.getHeader('Request-Id') ?? '');
  sendJson(res.status(ERROR_CODES[error.code].status), errorBody(error, requestId));
}

/**
 * Retry-After of a 503 while the database is out of reach: a failover's usual length (the failover
 * test measures one: docs/design/postgres-failover.md), so that a client's retry finds the new primary.
 */
const DATABASE_RETRY_AFTER_S = 5;

/** While the database is away every request fails alike: one line now and then says so. */
const UNAVAILABLE_LOG_MS = 10_000;

/**
 * Last in the chain. Our own errors map through the table; errors Express raises for bad input
 * (an undecodable path, say) are the client's and answer 400; the database out of reach (a
 * failover, a restart) answers 503 with Retry-After, a condition the client waits out; anything else
 * is logged with its stack and answered as a bare 500 that leaks no stack, SQL or host name.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  const unavailableLogDue = atMostEvery(UNAVAILABLE_LOG_MS);
  return (error: unknown, req, res, _next) => {
    if (res.headersSent) return;
    if (error instanceof ApiError) return sendError(res, error);
    const status = (error as { status?: number; statusCode?: number }).status ?? 0;
    if (status >= 400 && status < 500) {
      return sendError(res, new ApiError('invalid_request', 'The request could not be read.'));
    }
    if (isDatabaseUnavailable(error)) {
      if (unavailableLogDue())
        logger.warn(
          { err: error, requestId: res.getHeader('Request-Id') },
          'database unavailable: answering 503',
        );
      res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_S));
      return sendError(
        res,
        new ApiError(
          'service_unavailable',
          'The service is briefly unavailable. Please retry after Retry-After seconds.',
        ),
      );
    }
    logger.error(
      { err: error, requestId: res.getHeader('Request-Id'), path: redactCredentials(req.path) },
      'unhandled error',
    );
    sendError(res, new ApiError('internal_error', 'Something went wrong on our side. Please retry later.'));
  };
}
