import type { IRouter } from 'express';
import { sql, type Kysely } from 'kysely';
import type { Database } from '@trips/db';
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
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`SELECT 1`.execute(db),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), 2_000))),
      ]);
      sendJson(res, { status: 'ready' });
    } catch {
      sendJson(res.status(503), { status: 'unavailable', checks: { postgres: 'unreachable' } });
    } finally {
      clearTimeout(timer);
    }
  });
  router.all(['/healthz', '/readyz'], methodNotAllowed);
}
