import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** One statement of a script: its text with `$n` placeholders, and their values. */
export type Statement = Pick<CompiledQuery, 'sql' | 'parameters'>;

/**
 * Several statements sent as one message and answered together: one round trip for all of them,
 * where each statement on its own costs one (Postgres' simple query protocol). The recorder's
 * batches are scripts: on a busy machine the round trips were most of what a batch cost, in the
 * recorder and in its Postgres backend alike.
 *
 * The simple protocol carries no parameters, so each statement's parameters are written into its
 * text as literals (`inline`). Statements run in order, each seeing the ones before; the first
 * that fails stops the rest. A script that opens a transaction leaves it open: the caller ends
 * it, in the same script or a later one, and rolls it back when a script fails (`rollback`).
 */
export async function runScript(db: Db, statements: readonly Statement[]): Promise<unknown[][]> {
  if (statements.length === 0) return [];
  const text = statements.map(inline).join(';\n');
  const { rows } = await sql.raw<unknown[]>(text).execute(db);
  // One statement answers its rows; several answer one row per statement holding that statement's
  // rows (fast-paths/lean-client-query.ts).
  return statements.length === 1 ? [rows] : rows;
}

export const begin = CompiledQuery.raw('BEGIN');
export const commit = CompiledQuery.raw('COMMIT');

/**
 * Runs `work` on one connection of the pool, for scripts that open a transaction in one round trip
 * and end it in a later one. Should `work` fail, the transaction is rolled back before the
 * connection goes back to the pool (a lost connection has rolled it back already).
 */
export function onOneConnection<T>(
  db: Kysely<Database>,
  work: (conn: Kysely<Database>) => Promise<T>,
): Promise<T> {
  return db.connection().execute(async (conn) => {
    try {
      return await work(conn);
    } catch (error) {
      await rollback(conn).catch(() => {});
      throw error;
    }
  });
}

/** Ends the connection's transaction after a failed script; harmless when none is open. */
export async function rollback(db: Db): Promise<void> {
  await sql.raw('ROLLBACK').execute(db);
}

/**
 * The statement's text with each `$n` replaced by its parameter as a literal. Only for our own
 * statement texts, which hold no `$` but their placeholders.
 */
export function inline(query: Statement): string {
  return query.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index >= query.parameters.length) throw new Error(`inline: no parameter for $${n}`);
    return literal(query.parameters[index]);
  });
}

/**
 * A value as an SQL literal, quoted by pg's escapeLiteral (libpq's rules: safe whatever
 * standard_conforming_strings is). Arrays become array literals ('{…}') and objects JSON text;
 * the statement's casts give them their types, as they do to bound parameters.
 */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`inline: ${value} is not a number Postgres takes`);
    return String(value);
  }
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return pg.escapeLiteral(arrayText(value));
  return pg.escapeLiteral(text(value));
}

function text(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The text of a one-dimensional array: every element quoted, NULL bare (Postgres' array input). */
function arrayText(values: readonly unknown[]): string {
  const elements = values.map((v) =>
    v === null || v === undefined ? 'NULL' : `"${text(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`,
  );
  return `{${elements.join(',')}}`;
}
