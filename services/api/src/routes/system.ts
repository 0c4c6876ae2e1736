import type { IRouter } from 'express';
import type { Kysely } from 'kysely';
import { pingDatabase, type Database } from '@trips/db';
import { withTimeout } from '@trips/runtime';
import { sendJson } from '../http/send-json.ts';

/**
 * Probes for Kubernetes: liveness checks nothing outside the process, readiness checks Postgres.
 * Added to the caller's router, not a Router of their own: see app.ts for why. Returns the paths
 * it adds.
 */
export function addProbeRoutes(router: IRouter, db: Kysely<Database>): string[] {
  const livenessPath = '/healthz';
  router.get(livenessPath, (_req, res) => {
    sendJson(res, { status: 'ok' });
  });
  const readinessPath = '/readyz';
  router.get(readinessPath, async (_req, res) => {
    try {
      await withTimeout(pingDatabase(db), 2_000, () => new Error('timeout'));
      sendJson(res, { status: 'ready' });
    } catch {
      sendJson(res.status(503), { status: 'unavailable', checks: { postgres: 'unreachable' } });
    }
  });
  return [livenessPath, readinessPath];
}
