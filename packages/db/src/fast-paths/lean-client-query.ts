import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Hot statements opt in to being prepared by starting with a comment naming them, such as
 * `/* prepared: record_attempts *\/`. The name also shows in pg_stat_activity, so an operator sees
 * which statement a backend runs.
 */
const PREPARED_MARK = /^\/\* prepared: ([a-z][a-z0-9_]*) \*\//;

/** Named statements per text, so each text is hashed once. Bounded by the marked texts in the code. */
const names = new Map<string, string>();

/**
 * The statement name for a marked SQL text, or undefined when unmarked. The name carries a hash of
 * the text: pg refuses one name for two texts, and two texts from one function (say, two WHERE
 * clauses) must be two statements.
 */
export function preparedName(text: string): string | undefined {
  if (!text.startsWith('/* prepared: ')) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    const mark = PREPARED_MARK.exec(text);
    if (!mark) return undefined;
    name = `${mark[1]}_${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
    names.set(text, name);
  }
  return name;
}

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * Several statements in one text (a script, ../script.ts) answer one result each, which pg gives
 * as an array; kysely reads `rows` of one result. So, sent by kysely, a script answers one row per
 * statement, holding that statement's rows. A caller of pg's own `query(text)` keeps pg's array.
 */
function scriptResult(results: pg.QueryResult[]): Pick<pg.QueryResult, 'command' | 'rowCount' | 'rows'> {
  return { command: 'SCRIPT', rowCount: null, rows: results.map((r) => r.rows) };
}

/**
 * How this client sends `query(text, values)`, the form kysely uses; calls with a callback or a
 * config object go to pg unchanged (a caller may reuse its config, and pg would store a callback
 * on it). Three changes, the first two measured by `pnpm bench:dispatcher` and `pnpm bench:api`:
 *
 * - **Marked statements are prepared**, named by `preparedName`: Postgres parses and plans them
 *   once per connection instead of on every call. For the dispatcher's batched statements that
 *   was most of their cost in the backend's CPU, for the attempts batch and the webhooks read
 *   alike (dispatcher.md, "First attempts at fan-out", step 2). pg remembers which names this
 *   connection has prepared, and a new connection (after a Postgres restart, say) prepares them
 *   again on first use.
 * - **pg's callback form, in a plain promise**, instead of the promise pg builds itself. With pg's
 *   own promise each query's result objects outlived their request: under the API benchmark's
 *   load they survived every young-generation collection and were promoted, and the collections
 *   and mark-compacts that followed were the slow episodes of the paced p99 (api.md, "Run after
 *   the changes below", step 4). Through the callback form nothing is left behind. Like pg, a
 *   failure's stack is captured anew so it does not end in the socket's read callback.
 * - **A script answers each statement's rows** (scriptResult), where kysely would see none.
 */
export function sendQueriesLean(client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (config, values, callback) => {
    if (typeof config !== 'string' || callback !== undefined || typeof values === 'function') {
      return query(config, values, callback);
    }
    const name = preparedName(config);
    return new Promise((resolve, reject) => {
      const answered = (error: Error | null, result: pg.QueryResult | pg.QueryResult[]) => {
        if (error) {
          Error.captureStackTrace(error);
          return reject(error);
        }
        // Only kysely's form (values an array) gets the script's shape; pg's own callers keep pg's.
        resolve(Array.isArray(result) && Array.isArray(values) ? scriptResult(result) : result);
      };
      if (name) query({ name, text: config, values }, answered);
      else query(config, values, answered);
    });
  };
}
