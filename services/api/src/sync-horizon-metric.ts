import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { syncHorizonLagSeconds } from '@trips/db/sync';
import { Gauge, withTimeout, type Logger, type Registry } from '@trips/runtime';

/** A scrape waits at most this long for the database; Prometheus' own default timeout is 10 s. */
const QUERY_TIMEOUT_MS = 2_000;

/**
 * `trips_sync_horizon_lag_seconds`: how far behind now list sync's horizon is, read at each scrape.
 * A writing transaction left open (the host application's, idle in a transaction) holds every
 * agency's `updated_since` lists back for as long as it stays open, and nothing else would show
 * it: the lists still answer 200, just without the newest changes (docs/api.md).
 *
 * While the database does not answer, the gauge reads NaN and the rest of the scrape still
 * answers: the request metrics matter most exactly then.
 */
export function addSyncHorizonMetric(registry: Registry, db: Kysely<Database>, logger: Logger): void {
  new Gauge({
    name: 'trips_sync_horizon_lag_seconds',
    help: 'Age of the oldest writing transaction open in the database: list sync returns nothing newer (0 when none).',
    registers: [registry],
    async collect() {
      try {
        const lag = await withTimeout(
          syncHorizonLagSeconds(db),
          QUERY_TIMEOUT_MS,
          () => new Error(`no answer within ${QUERY_TIMEOUT_MS} ms`),
        );
        this.set(Math.max(0, lag));
      } catch (error) {
        logger.warn({ err: (error as Error).message }, 'sync horizon not read for /metrics');
        this.set(Number.NaN);
      }
    },
  });
}
