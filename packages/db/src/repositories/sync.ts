import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../schema.ts';

// The horizon over pg_stat_activity (see syncHorizon); least() skips the null of a database with
// no writer open.
const HORIZON = sql`least(statement_timestamp(), min(xact_start) FILTER (WHERE backend_xid IS NOT NULL))`;

/**
 * The visibility horizon of `updated_since` sync (decisions.md D4).
 *
 * A row becomes visible when its writing transaction commits, possibly long after its updated_at.
 * A reader that returned rows up to time T and then asked for `updated_since=T` would skip a row
 * written before T by a transaction that committed after the read. So lists only return rows
 * older than the horizon: the start of the oldest transaction still open in this database that
 * holds a transaction id, i.e. has written something; with none, the start of this statement.
 *
 * Why transactions that have not written do not count: updated_at is the time of the write, taken
 * after the writer got its id (migration 0011's trigger). A transaction found here without an id
 * can only write rows later than this statement's start; one with an id wrote none older than its
 * own start. Either way every row committed after this read carries an updated_at at or after the
 * horizon, and the reader gets it next time. A pg_dump, a report or a session idle in a
 * read-only transaction holds no id, so it does not hold every agency's sync back.
 *
 * The API's database role must see other sessions' xact_start and backend_xid (pg_read_all_stats,
 * e.g. by `GRANT pg_monitor`; see `canSeeOtherTransactions` and docs/operations.md). Without it
 * the view shows them as null, the horizon is our own statement's start, and a late commit of
 * another role's writer is skipped without a sound.
 */
export async function syncHorizon(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ horizon: string }>`
    SELECT to_char(${HORIZON} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS horizon
      FROM pg_stat_activity
     WHERE datname = current_database()
  `.execute(db);
  return rows[0]!.horizon;
}

/**
 * How far the horizon is behind now, in seconds: the age of the oldest writing transaction open in
 * the database, 0 with none. While it grows, lists return nothing changed since it (a metric).
 */
export async function syncHorizonLagSeconds(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ lag: number }>`
    SELECT extract(epoch FROM statement_timestamp() - ${HORIZON})::float8 AS lag
      FROM pg_stat_activity
     WHERE datname = current_database()
  `.execute(db);
  return rows[0]!.lag;
}

/** Whether this connection's role may read other sessions' xact_start, as `syncHorizon` needs. */
export async function canSeeOtherTransactions(db: Kysely<Database>): Promise<boolean> {
  // True for superusers too: they hold the privileges of every role.
  const { rows } = await sql<{ ok: boolean }>`SELECT pg_has_role('pg_read_all_stats', 'USAGE') AS ok`.execute(
    db,
  );
  return rows[0]!.ok;
}

/** A position in an (updated_at, id) ordered list, kept to the microsecond Postgres stores. */
export interface SyncPosition {
  updatedAt: string;
  id: string;
}

export interface SyncPage<Row> {
  rows: Row[];
  /** Set when more rows follow; the position of the last row returned. */
  next: SyncPosition | null;
}

/** `updated_at` as exact UTC text: JS Dates keep only milliseconds, which would break cursors. */
export const exactUpdatedAt = (column: string) =>
  sql<string>`to_char(${sql.ref(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface SyncQuery {
  updatedSince?: string | undefined;
  after?: SyncPosition | undefined;
  limit: number;
  /**
   * Only for the test that proves the horizon is needed: without it a concurrent writer's row
   * can be skipped. Production callers never pass false.
   */
  useHorizon?: boolean;
}

/**
 * Applies one sync window to a list query over `alias`: `updated_at >= updatedSince`, after the
 * cursor position, before the horizon, in (updated_at, id) order, one extra row to learn has_more.
 */
// The three tables' builders share nothing nameable but these two type slots.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyListQuery = SelectQueryBuilder<Database, any, any>;

export async function inSyncWindow<QB extends AnyListQuery>(
  db: Kysely<Database>,
  builder: QB,
  alias: 't' | 'p' | 'c',
  query: SyncQuery,
): Promise<QB> {
  const updatedAt = sql.ref(`${alias}.updated_at`);
  const id = sql.ref(`${alias}.id`);
  let q: AnyListQuery = builder;
  if (query.updatedSince !== undefined)
    q = q.where(sql<boolean>`${updatedAt} >= ${query.updatedSince}::timestamptz`);
  if (query.after !== undefined) {
    q = q.where(
      sql<boolean>`(${updatedAt}, ${id}) > (${query.after.updatedAt}::timestamptz, ${query.after.id})`,
    );
  }
  if (query.useHorizon !== false)
    q = q.where(sql<boolean>`${updatedAt} < ${await syncHorizon(db)}::timestamptz`);
  return q
    .orderBy(updatedAt)
    .orderBy(id)
    .limit(query.limit + 1) as QB;
}

/** Cuts the extra row fetched to learn whether more follow, and strips the exact timestamp. */
export function pageOf<Row extends { id: string; exact_updated_at: string }>(
  rows: Row[],
  limit: number,
): SyncPage<Omit<Row, 'exact_updated_at'>> {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    rows: page.map(({ exact_updated_at: _exact, ...row }) => row),
    next: rows.length > limit && last ? { updatedAt: last.exact_updated_at, id: last.id } : null,
  };
}
