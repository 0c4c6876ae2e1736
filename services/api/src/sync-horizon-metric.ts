import type { Kysely } from 'kysely';
import { syncHorizonLagSeconds, type Database } from '@trips/db';
import { Gauge, type Registry } from '@trips/runtime';

/**
 * `trips_sync_horizon_lag_seconds`: how far behind now list sync's horizon is, read at each scrape.
 * A writing transaction left open (the host application's, idle in a transaction) holds every
 * agency's `updated_since` lists back for as long as it stays open, and nothing else would show
 * it: the lists still answer 200, just without the newest changes (docs/api.md).
 */
export function addSyncHorizonMetric(registry: Registry, db: Kysely<Database>): void {
  new Gauge({
    name: 'trips_sync_horizon_lag_seconds',
    help: 'Age of the oldest writing transaction open in the database: list sync returns nothing newer (0 when none).',
    registers: [registry],
    async collect() {
      this.set(Math.max(0, await syncHorizonLagSeconds(db)));
    },
  });
}
