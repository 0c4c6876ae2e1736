import type { RequestHandler } from 'express';
import type { Logger } from '@trips/runtime';

/**
 * One line per request with its id, route, status and duration. Hand-written rather than
 * pino-http's default so that no header (and so no key) is ever part of the line.
 */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      logger.info(
        {
          requestId: res.getHeader('Request-Id'),
          method: req.method,
          path: req.path.slice(0, 200),
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          keyId: req.caller?.keyId,
        },
        'request',
      );
    });
    next();
  };
}
