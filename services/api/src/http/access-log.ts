import type { RequestHandler } from 'express';
import type { Logger } from '@trips/runtime';
import type { ObserveRequest } from './request-metrics.ts';

/**
 * One line per request with its id, route, status and duration. Hand-written rather than
 * pino-http's default so that no header (and so no key) is ever part of the line.
 *
 * The line is built from these six fields only, none of which can hold a credential, so it is
 * written by a child logger without the redaction paths of the service's logger: checking them
 * on every line cost more than building it (docs/benchmarks.md). The same finish hook feeds the
 * latency histogram, so a request pays for one listener, not two.
 */
export function accessLog(logger: Logger, observe?: ObserveRequest): RequestHandler {
  const lines = logger.child({}, { redact: [] });
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => {
      const ms = performance.now() - started;
      observe?.(req, res, ms / 1000);
      lines.info(
        {
          requestId: res.getHeader('Request-Id'),
          method: req.method,
          // Inside a mounted router (/api/v1, /settings) req.path is relative to the mount.
          path: (req.baseUrl + req.path).slice(0, 200),
          status: res.statusCode,
          ms: Math.round(ms * 1000) / 1000,
          keyId: req.caller?.keyId,
        },
        'request',
      );
    });
    next();
  };
}
