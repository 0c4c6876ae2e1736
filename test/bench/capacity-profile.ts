// Under BENCH_CAPACITY_PROFILE=1, `pnpm bench:capacity` prints where Postgres's time per event went
// in each step's measured window: its statements (pg_stat_statements, which the server must have
// loaded by shared_preload_libraries; with pg_stat_statements.track=all the statements run inside
// triggers and functions show as nested), transactions, WAL, and each table's and index's work.
// Per event written in the window; the API's reads beside it are counted in, as Postgres serves
// them. Counters are read before and after the window and subtracted, so nothing is reset. The µs
// are pg_stat_statements' wall clock in the executor (and the planner, with track_planning on): on
// a loaded machine they include waiting for a core, so read them as shares more than as CPU.
import { table } from './lib.ts';

import type { createPool } from '@trips/db';

type Pool = ReturnType<typeof createPool>;
const TOP = 25;

type Row = Record<string, string | number | boolean | null>;

export interface Snapshot {
  at: Date;
  statements: Map<string, Row>;
  database: Row;
  wal: Row;
  tables: Map<string, Row>;
  indexes: Map<string, Row>;
}

/** False, with one line saying why, when the server has not loaded pg_stat_statements. */
export async function startProfile(db: Pool): Promise<boolean> {
  try {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await db.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
    return true;
  } catch (error) {
    console.log(`profile: pg_stat_statements unavailable (${(error as Error).message})`);
    return false;
  }
}

const rows = async (db: Pool, query: string) => (await db.query<Row>(query)).rows;

export async function snapshot(db: Pool): Promise<Snapshot> {
  // Backends hand their table counts over when idle (at most a second late): a small error in 60 s.
  const statements = await rows(
    db,
    `SELECT queryid::text || '/' || toplevel AS key, toplevel, query, calls, total_exec_time AS ms,
               total_plan_time AS plan_ms,
               rows, shared_blks_hit + shared_blks_read AS blocks, shared_blks_dirtied AS dirtied,
               wal_bytes::float8 AS wal
          FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  const [database] = await rows(
    db,
    `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_fetched, blks_hit, blks_read
          FROM pg_stat_database WHERE datname = current_database()`,
  );
  const [wal] = await rows(
    db,
    `SELECT wal_records, wal_fpi, wal_bytes::float8, wal_write, wal_sync FROM pg_stat_wal`,
  );
  const tables = await rows(
    db,
    `SELECT relname AS key, seq_scan, seq_tup_read, idx_scan, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
               n_dead_tup, n_live_tup, vacuum_count + autovacuum_count AS vacuums, analyze_count + autoanalyze_count AS analyzes
          FROM pg_stat_user_tables`,
  );
  const indexes = await rows(
    db,
    `SELECT relname || '.' || indexrelname AS key, idx_scan, idx_tup_read FROM pg_stat_user_indexes`,
  );
  const byKey = (list: Row[]) => new Map(list.map((r) => [String(r.key), r]));
  return {
    at: new Date(),
    statements: byKey(statements),
    database: database!,
    wal: wal!,
    tables: byKey(tables),
    indexes: byKey(indexes),
  };
}

const num = (row: Row | undefined, column: string) => Number(row?.[column] ?? 0);
const delta = (a: Row | undefined, b: Row, column: string) => num(b, column) - num(a, column);
const per = (n: number, events: number, digits = 3) => (n / events).toFixed(digits);

/** The window's work per event, as tables to print. */
export function profileReport(before: Snapshot, after: Snapshot, events: number): string {
  const statements = [...after.statements.values()]
    .map((b) => {
      const a = before.statements.get(String(b.key));
      return {
        toplevel: b.toplevel,
        query: String(b.query).replace(/\s+/g, ' '),
        calls: delta(a, b, 'calls'),
        ms: delta(a, b, 'ms'),
        planMs: delta(a, b, 'plan_ms'),
        rows: delta(a, b, 'rows'),
        blocks: delta(a, b, 'blocks'),
        dirtied: delta(a, b, 'dirtied'),
        wal: delta(a, b, 'wal'),
      };
    })
    .filter((s) => s.calls > 0);
  const top = statements.filter((s) => s.toplevel).sort((x, y) => y.ms - x.ms);
  const totalMs = top.reduce((sum, s) => sum + s.ms, 0);
  const nested = statements.filter((s) => !s.toplevel).sort((x, y) => y.ms - x.ms);
  const statementRows = (list: typeof statements) =>
    list
      .slice(0, TOP)
      .map((s) => [
        per(s.calls, events),
        per(s.ms * 1000, events, 1),
        per(s.planMs * 1000, events, 1),
        per(s.rows, events, 2),
        per(s.blocks, events, 1),
        per(s.dirtied, events, 2),
        per(s.wal, events, 0),
        s.query.slice(0, 150),
      ]);
  const header = [
    'calls/ev',
    'µs/ev',
    'plan µs/ev',
    'rows/ev',
    'blocks/ev',
    'dirtied/ev',
    'WAL B/ev',
    'statement',
  ];
  const d = (column: string) => delta(before.database, after.database, column);
  const w = (column: string) => delta(before.wal, after.wal, column);
  const tableRows = [...after.tables.values()]
    .map((b) => {
      const a = before.tables.get(String(b.key));
      const cells = [
        'seq_scan',
        'seq_tup_read',
        'idx_scan',
        'n_tup_ins',
        'n_tup_upd',
        'n_tup_hot_upd',
        'n_tup_del',
      ].map((c) => delta(a, b, c));
      return { name: String(b.key), cells, end: b, vacuums: delta(a, b, 'vacuums') };
    })
    .filter((t) => t.cells.some((c) => c > 0))
    .sort((x, y) => y.cells[2]! + y.cells[3]! - (x.cells[2]! + x.cells[3]!));
  const indexRows = [...after.indexes.entries()]
    .map(([key, b]) => ({
      key,
      scans: delta(before.indexes.get(key), b, 'idx_scan'),
      read: delta(before.indexes.get(key), b, 'idx_tup_read'),
    }))
    .sort((x, y) => y.scans - x.scans);
  return [
    `Postgres per event, ${events} events written from ${before.at.toISOString()} to ${after.at.toISOString()}:`,
    `transactions ${per(d('xact_commit'), events)} committed, ${per(d('xact_rollback'), events)} rolled back; ` +
      `statements (top level) ${per(
        top.reduce((s, t) => s + t.calls, 0),
        events,
        2,
      )}, executing ${per(totalMs * 1000, events, 1)} µs; ` +
      `tuples inserted ${per(d('tup_inserted'), events, 2)}, updated ${per(d('tup_updated'), events, 2)}, deleted ${per(d('tup_deleted'), events, 2)}; ` +
      `blocks hit ${per(d('blks_hit'), events, 1)}, read ${per(d('blks_read'), events, 2)}; ` +
      `WAL ${per(w('wal_records'), events, 1)} records, ${per(w('wal_fpi'), events, 2)} full pages, ${per(w('wal_bytes'), events, 0)} B, ` +
      `${per(w('wal_write'), events, 2)} writes, ${per(w('wal_sync'), events, 2)} syncs`,
    '',
    `top-level statements by time (${TOP} at most):`,
    table(header, statementRows(top)),
    '',
    'nested (in triggers and functions; their time is inside their caller’s):',
    table(header, statementRows(nested)),
    '',
    'tables, per event (dead tuples and vacuums in the window: at its end):',
    table(
      [
        'table',
        'seq scans',
        'seq rows read',
        'idx scans',
        'inserted',
        'updated',
        'HOT',
        'deleted',
        'dead at end',
        'vacuums',
      ],
      tableRows.map((t) => [
        t.name,
        ...t.cells.map((c, i) => per(c, events, i === 1 ? 1 : 3)),
        String(t.end.n_dead_tup),
        String(t.vacuums),
      ]),
    ),
    '',
    'indexes scanned, per event:',
    table(
      ['index', 'scans/ev', 'rows read/ev'],
      indexRows.filter((i) => i.scans > 0).map((i) => [i.key, per(i.scans, events), per(i.read, events, 2)]),
    ),
    `never scanned in the window: ${indexRows
      .filter((i) => i.scans === 0)
      .map((i) => i.key)
      .join(', ')}`,
  ].join('\n');
}
