import { randomBytes } from 'node:crypto';
import type { RequestHandler } from 'express';

/**
 * Every response carries a Request-Id (D1), set first so even an error raised by the earliest
 * middleware reports it. Generated here, never taken from the client: it names our log line.
 */
export const assignRequestId: RequestHandler = (_req, res, next) => {
  res.setHeader('Request-Id', `req_${randomBytes(12).toString('base64url')}`);
  next();
};
