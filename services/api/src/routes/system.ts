import type { IRouter } from 'express';
import type { Kysely } from 'kysely';
import { pingDatabase, type Database } from '@trips/db';
import { withTimeout } from '@trips/runtime';
import { methodNotAllowed } from '../errors.ts';
import { sendJson } from '../http/send-json.ts';

/**
 * Probes for Kubernetes: liveness checks nothing outside the process, readiness checks Postgres.
 * Added to the caller's router, not a Router of their own: see app.ts for why.
 */
export function addProbeRoutes(router: IRouter, db: Kysely<Database>): void {
  router.get('/healthz', (_req, res) => {
    sendJson(res, { status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    try {
      await withTimeout(pingDatabase(db), 2_000, () => new Error('timeout'));
      sendJson(res, { status: 'ready' });
    } catch {
      sendJson(res.status(503), { status: 'unavailable', checks: { postgres: 'unreachable' } });
    }
  });
  router.all(['/healthz', '/readyz'], methodNotAllowed);
}
