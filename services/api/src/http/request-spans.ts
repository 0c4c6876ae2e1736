import type { RequestHandler, Response } from 'express';
import type { OpenSpan, Tracer } from '@trips/runtime';
import { routeOf } from './request-metrics.ts';

const SPAN = Symbol('request span');
const PROBES = new Set(['/healthz', '/readyz']);
type Traced = Response & { [SPAN]?: OpenSpan };

/**
 * One server span per request, installed only while tracing is on (docs/operations.md,
 * "Tracing"). It continues the caller's W3C `traceparent` when one came, and is named after the
 * route's pattern (`GET /api/v1/trips/:id`), never the raw path. It says who called by the agency
 * and the key's id; never the key, whose header is not read here. The probes get none.
 */
export function requestSpans(tracer: Tracer): RequestHandler {
  // 'close' rather than 'finish': a request the client gave up on ends its span too.
  function closed(this: Traced) {
    const req = this.req;
    const route = routeOf(req, this);
    if (route !== 'unmatched') this[SPAN]!.updateName(`${req.method} ${route}`);
    const requestId = this.getHeader('Request-Id');
    this[SPAN]!.end(
      {
        'http.route': route,
        'http.response.status_code': this.statusCode,
        'trips.agency.id': req.caller?.agencyId,
        'trips.api_key.id': req.caller?.keyId,
        'trips.request.id': typeof requestId === 'string' ? requestId : undefined,
      },
      this.statusCode >= 500,
    );
  }
  return (req, res, next) => {
    // Kubernetes' probes every few seconds would bury the requests worth reading.
    if (PROBES.has(req.path)) return next();
    (res as Traced)[SPAN] = tracer.startRequestSpan(req.method, req.headers, {
      'http.request.method': req.method,
    });
    res.on('close', closed);
    next();
  };
}
