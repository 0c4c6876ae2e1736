import type { Request, RequestHandler, Response } from 'express';
import { Histogram, type Registry } from '@trips/runtime';

export type ObserveRequest = (req: Request, res: Response, seconds: number) => void;

/**
 * The API's latency histogram by route and status. The route is the matched pattern
 * (`/api/v1/trips/:id`), never the raw path, so the series stay few whatever ids clients send.
 */
export function requestMetrics(registry: Registry): ObserveRequest {
  const histogram = new Histogram({
    name: 'trips_http_request_duration_seconds',
    help: 'API request latency by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return (req, res, seconds) => {
    histogram.observe(
      { method: req.method, route: routeOf(req, res), status: String(res.statusCode) },
      seconds,
    );
  };
}

/** The route pattern a request matched (`/api/v1/trips/:id`), or `unmatched`. */
export function routeOf(req: Request, res: Response): string {
  const mount = (res.locals.mount as string | undefined) ?? req.baseUrl;
  return req.route ? `${mount}${String(req.route.path)}` : 'unmatched';
}

/**
 * Remembers where a router is mounted. Express resets `req.baseUrl` when an error leaves the
 * router, so by the time an error answer finishes the mount would be lost from the route label.
 */
export const rememberMount: RequestHandler = (req, res, next) => {
  res.locals.mount = req.baseUrl;
  next();
};
