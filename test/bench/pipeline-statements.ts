// Under BENCH_PROFILE, `pnpm bench:pipeline` prints the statements ours' database spent its time on,
// from pg_stat_statements, where the server has it loaded (shared_preload_libraries: the bench
// never restarts Postgres to load it). Counted from just before ours' first round to the end, so
// warm-ups included; per trip written in that time.
import { createPool } from '@trips/db';
import { fmt, table } from './lib.ts';

const TOP = 15;

interface Statement {
  query: string;
  calls: number;
  total_ms: number;
  rows: number;
}

/**
 * Creates the extension in the run's database and resets its counts for that database only;
 * false, with one line saying why, when the server has not loaded the library.
 */
export async function startStatements(databaseUrl: string): Promise<boolean> {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'bench-statements' });
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await pool.query(
      'SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)',
    );
    return true;
  } catch (error) {
    console.log(
      `pg_stat_statements: unavailable in this server (${(error as Error).message}); going on without it`,
    );
    return false;
  } finally {
    await pool.end();
  }
}

/** The top statements of the run's database by total execution time, as a table. */
export async function topStatements(databaseUrl: string): Promise<string> {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'bench-statements' });
  try {
    const trips = Number((await pool.query('SELECT count(*) AS n FROM trips')).rows[0].n);
    const { rows } = await pool.query<Statement>(
      `SELECT query, calls::float8 AS calls, total_exec_time AS total_ms, rows::float8 AS rows
         FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        ORDER BY total_exec_time DESC LIMIT ${TOP}`,
    );
    const lines = rows.map((r) => [
      fmt.ms(r.total_ms),
      String(r.calls),
      (r.calls / trips).toFixed(3),
      fmt.ms(r.total_ms / r.calls),
      String(r.rows),
      r.query.replace(/\s+/g, ' ').slice(0, 110),
    ]);
    return (
      `pg_stat_statements, ours' database, top ${TOP} by total time (${trips} trips written since the reset):\n` +
      table(['total ms', 'calls', 'calls/trip', 'mean ms', 'rows', 'statement'], lines)
    );
  } finally {
    await pool.end();
  }
}
