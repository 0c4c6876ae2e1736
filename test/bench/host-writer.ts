// The host application's writes in bench:soak and bench:capacity: trips inserted one per
// transaction at an even rate, each making one trip.created event.
import type { createPool } from '@trips/db';
import { now } from './system.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The host application's one statement, prepared once per connection, as a lean host would. */
const writeTrip = (table: string) => ({
  name: `bench_write_${table.replace('.', '_')}`,
  text: `INSERT INTO ${table} (id, agency_id, title, num_days) VALUES ($1, $2, $3, 3)`,
});

/**
 * The host application's writes: one trip per INSERT, each its own transaction, started on an even
 * schedule of `rate` a second whether or not earlier ones have answered. Each makes one
 * trip.created event. `committed` notes when each INSERT answered (just after its commit). The
 * loop sleeps until the next write is due: the writer's CPU is counted in the machine's figures.
 * `table`: `trips`, or the bare pipeline's copy of it (system.ts `tripsTable`).
 */
export function writeTrips(
  pool: ReturnType<typeof createPool>,
  agencyId: string,
  rate: number,
  idPrefix = 'trp_w',
  table = 'trips',
) {
  const statement = writeTrip(table);
  const committed = new Map<string, number>();
  const inFlight = new Set<Promise<unknown>>();
  let started = 0;
  let failures = 0;
  let firstFailure = '';
  let running = true;
  const begin = performance.now();
  const loop = (async () => {
    while (running) {
      for (const due = ((performance.now() - begin) / 1000) * rate; started < due; started++) {
        const id = `${idPrefix}${started}`;
        const write = pool
          .query({ ...statement, values: [id, agencyId, `Write ${started}`] })
          .then(
            () => void committed.set(id, now()),
            (error: Error) => {
              failures++;
              firstFailure ||= error.message;
            },
          )
          .finally(() => inFlight.delete(write));
        inFlight.add(write);
      }
      const nextDue = begin + (started * 1000) / rate;
      await sleep(Math.max(1, nextDue - performance.now()));
    }
    await Promise.all(inFlight);
  })();
  return {
    committed,
    get failures() {
      return failures;
    },
    get firstFailure() {
      return firstFailure;
    },
    /** Starts no more writes and waits for those in flight. */
    async stop() {
      running = false;
      await loop;
    },
  };
}
