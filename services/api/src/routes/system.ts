import type { IRouter } from 'express';
import { sql, type Kysely } from 'kysely';
import type { Database } from '@trips/db';

/**
 * Probes for Kubernetes: liveness checks nothing outside the process, readiness checks Postgres.
 * Added to the caller's router, not a Router of their own: see app.ts for why.
 */
export function addProbeRoutes(router: IRouter, db: Kysely<Database>): void {
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`SELECT 1`.execute(db),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), 2_000))),
      ]);
      res.json({ status: 'ready' });
    } catch {
      res.status(503).json({ status: 'unavailable', checks: { postgres: 'unreachable' } });
    } finally {
      clearTimeout(timer);
    }
  });
}
