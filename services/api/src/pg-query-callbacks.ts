import pg from 'pg';

export type QueryFn = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;
const INSTALLED = Symbol.for('trips.api.pgQueryCallbacks');

/**
 * Makes pg's `Client#query(text, values)` (the form kysely uses) run through pg's callback form,
 * wrapped in a plain promise, instead of the promise pg builds itself.
 *
 * Why: with pg's own promise, each query's result objects (its row description, rows and dates)
 * outlived the request by a second or more. Under the benchmark's load about 1–2 MB of them
 * survived every young-generation collection and were promoted: the young generation grew to
 * 64 MB, its collections took 3–9 ms instead of under 1, and the old generation filled up for a
 * mark-compact every few seconds, which were the slow episodes of the paced p99. The same query
 * through the callback form leaves nothing behind (docs/benchmarks.md, "API").
 *
 * Results and errors are the same as before; like pg, a failure's stack is re-captured so that it
 * does not end in the socket's read callback. Only calls with a string and no callback are
 * changed: a config object may be reused by its caller, and pg would store a callback on it.
 * Idempotent; it changes every pg client of the process.
 */
export function answerPgQueriesThroughCallbacks(): void {
  const proto = pg.Client.prototype as unknown as { query: QueryFn; [INSTALLED]?: true };
  if (proto[INSTALLED]) return;
  proto.query = throughCallbacks(proto.query);
  proto[INSTALLED] = true;
}

/** `query` with a text and no callback sent as a callback call, wrapped in a plain promise. */
export function throughCallbacks(query: QueryFn): QueryFn {
  return function (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    if (typeof config !== 'string' || callback !== undefined || typeof values === 'function') {
      return query.call(this, config, values, callback);
    }
    return new Promise((resolve, reject) => {
      query.call(this, config, values, (error: Error | null, result: pg.QueryResult) => {
        if (!error) return resolve(result);
        Error.captureStackTrace(error);
        reject(error);
      });
    });
  };
}
