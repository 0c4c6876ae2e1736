import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { ERROR_CODES, type ErrorCode } from '@trips/contracts';
import type { Logger } from '@trips/runtime';
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
 * Last in the chain. Our own errors map through the table; errors Express raises for bad input
 * (an undecodable path, say) are the client's and answer 400; anything else is logged with its
 * stack and answered as a bare 500 that leaks no stack, SQL or host name.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (res.headersSent) return;
    if (error instanceof ApiError) return sendError(res, error);
    const status = (error as { status?: number; statusCode?: number }).status ?? 0;
    if (status >= 400 && status < 500) {
      return sendError(res, new ApiError('invalid_request', 'The request could not be read.'));
    }
    logger.error(
      { err: error, requestId: res.getHeader('Request-Id'), path: redactCredentials(req.path) },
      'unhandled error',
    );
    sendError(res, new ApiError('internal_error', 'Something went wrong on our side. Please retry later.'));
  };
}
