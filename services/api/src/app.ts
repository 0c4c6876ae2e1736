import express, { Router, type Express } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { tracing, type Logger } from '@trips/runtime';
import { authenticate } from './auth/authenticate.ts';
import type { CredentialsCache } from './auth/credentials-cache.ts';
import { ApiError, errorHandler, methodNotAllowed } from './errors.ts';
import { accessLog } from './http/access-log.ts';
import { rememberMount, type ObserveRequest } from './http/request-metrics.ts';
import { assignRequestId } from './http/request-id.ts';
import { requestSpans } from './http/request-spans.ts';
import { takeMalformedEscapesLiterally } from './http/malformed-escapes.ts';
import { enforceRateLimit, takeRateLimitToken } from './rate-limit/middleware.ts';
import type { TokenBucketStore } from './rate-limit/token-bucket.ts';
import { addReadApiRoutes } from './routes/read-api.ts';
import { addDocsRoutes } from './routes/docs.ts';
import type { EventCursors } from './routes/event-cursors.ts';
import { addEventsRoute } from './routes/events.ts';
import { addProbeRoutes } from './routes/system.ts';
import { settingsPageRouter, type SettingsPageOptions } from './settings-page/router.ts';

export interface ApiDependencies {
  db: Kysely<Database>;
  logger: Logger;
  credentials: CredentialsCache;
  onKeyUsed: (keyId: string) => void;
  rateLimits: TokenBucketStore;
  /** EVENT_RETENTION in milliseconds, for GET /events' cursor expiry. */
  eventRetentionMs: number;
  /** Seals GET /events cursors with the platform's key (migration 0013). */
  eventCursors: EventCursors;
  /** Records each request's latency (GET /metrics on the metrics port). */
  observeRequest?: ObserveRequest;
  /** Express' "trust proxy": whose X-Forwarded-For/-Proto to believe (API_TRUST_PROXY). */
  trustProxy?: string;
  /** The owners' settings page at /settings; without it, /settings is not served. */
  settingsPage?: SettingsPageOptions;
}

/**
 * The request pipeline, in the order D1 ranks its answers:
 * Request-Id → 401/403/403 (authenticate) → token taken, headers set → per route: 403 scope →
 * 429 → 400 (params) → 404 (lookup). Unknown paths and methods answer after 429 too.
 *
 * Routes are added straight to the app or to the one /api/v1 router rather than each group to a
 * Router of its own: a request that passes through a nested Router without a match leaves it by
 * setImmediate, so every API request used to wait two extra turns of the event loop (probes,
 * docs), and a GET /events three more, besides the Router's per-request allocations.
 */
export function createApp(deps: ApiDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', 'simple');
  if (deps.trustProxy) app.set('trust proxy', deps.trustProxy);

  // Tracing on only (tracing.ts): otherwise no request pays for it, not even a check.
  const tracer = tracing.tracer;
  if (tracer) app.use(requestSpans(tracer));
  app.use(assignRequestId, accessLog(deps.logger, deps.observeRequest));
  // The probes and the public contract, as their routes were added: another method on one of
  // these paths is a 405, GET being the only method on each.
  app.all([...addProbeRoutes(app, deps.db), ...addDocsRoutes(app)], methodNotAllowed);
  if (deps.settingsPage) {
    // A key revoked or rescoped on the page is refused here at once; other replicas hear of it from
    // Postgres' notification (credentials-cache.ts), a moment later.
    const keysChanged = () => deps.credentials.clear();
    app.use('/settings', settingsPageRouter(deps.db, deps.logger, { ...deps.settingsPage, keysChanged }));
  }

  const api = Router();
  api.use(rememberMount, takeMalformedEscapesLiterally);
  api.use(authenticate(deps.credentials, deps.onKeyUsed), takeRateLimitToken(deps.rateLimits, deps.logger));
  // The paths that exist under /api/v1, as their routes were added: another method on one is a
  // 405, GET being the only method on each; an unknown path a 404.
  const knownPaths = [...addReadApiRoutes(api, deps.db), ...addEventsRoute(api, deps)];
  api.all(knownPaths, enforceRateLimit, methodNotAllowed);
  api.use(enforceRateLimit, (req) => {
    throw new ApiError('not_found', `No such path: ${req.method} /api/v1${req.path.slice(0, 200)}`);
  });
  app.use('/api/v1', api);

  app.use((req) => {
    throw new ApiError('not_found', `No such path: ${req.method} ${req.path.slice(0, 200)}`);
  });
  app.use(errorHandler(deps.logger));
  return app;
}
