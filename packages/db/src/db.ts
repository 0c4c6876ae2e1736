import { Kysely, PostgresDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Database } from './schema.ts';
import { migrationProvider } from './migrations/index.ts';
import { sendQueriesLean } from './fast-paths/index.ts';
import { spoilsConnection } from './unavailable.ts';

// `date` (OID 1082) stays the 'YYYY-MM-DD' text Postgres sends: turning it into a JS Date would
// shift it by the process's time zone, and the API returns dates as plain dates anyway.
pg.types.setTypeParser(1082, (text) => text);
// bigint counts (OID 20) fit in a JS number for everything we count.
pg.types.setTypeParser(20, (text) => Number(text));

interface DbOptions {
  /** Pool size; the API's is sized against Postgres' max_connections divided by replicas. */
  max?: number;
  applicationName?: string;
  /** Told the text of every query sent, one call per round trip (tests that count them). */
  onStatement?: (sql: string) => void;
}

export function createDb(connectionString: string, options: DbOptions = {}): Kysely<Database> {
  const { onStatement } = options;
  return new Kysely<Database>({
    dialect: new PostgresDialect({ pool: createPool(connectionString, options) }),
    ...(onStatement && { log: (event) => onStatement(event.query.sql) }),
  });
}

/** The pg pool under createDb: its clients survive a lost server and send queries lean (fast-paths/). */
export function createPool(connectionString: string, options: DbOptions = {}): pg.Pool {
  const max = options.max ?? 10;
  const pool = new pg.Pool({
    connectionString,
    max,
    // A fixed-size pool, as HikariCP advises: a connection once opened stays open (pg closes idle
    // ones after 10 s by default), so a burst after a quiet spell does not wait for Postgres to
    // start a backend and for the prepared statements to be prepared again. `max` is already the
    // service's connection budget (docs/operations.md), so keeping it open costs nothing planned.
    min: max,
    application_name: options.applicationName ?? 'trips',
    connectionTimeoutMillis: 5_000,
  });
  // An idle client losing its server (Postgres restart) emits here; without a listener that
  // event would crash the process. The pool replaces the client on next use.
  pool.on('error', () => {});
  // A client that is checked out has no pool listener: one losing its server between two queries
  // of a transaction (the recorder's publisher waits for RabbitMQ's confirms inside one) emits
  // 'error' on itself, which crashed the recorder and the dispatcher at a Postgres restart. The
  // transaction's next query fails instead, and the pool drops the dead client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    sendQueriesLean(client);
    watchForSpoiling(client, spoiled);
  });
  const spoiled = new WeakSet<pg.PoolClient>();
  dropSpoiledOnRelease(pool, spoiled);
  return pool;
}

/** Marks the client spoiled when a query of kysely's (the promise form) fails in a way that spoils it. */
function watchForSpoiling(client: pg.PoolClient, spoiled: WeakSet<pg.PoolClient>): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: typeof query }).query = (...args) => {
    const result = query(...args);
    if (result instanceof Promise)
      result.catch((error: unknown) => {
        if (spoilsConnection(error)) spoiled.add(client);
      });
    return result;
  };
}

/**
 * A spoiled client given back is destroyed rather than kept (pg's release with an error), so the
 * pool never hands it out again. pg drops a client whose socket closed by itself, but not one whose
 * server still answers, only no longer as a primary: with a fixed-size pool it would stay for good,
 * failing every write. Through `connect()` without a callback, the form kysely uses.
 */
function dropSpoiledOnRelease(pool: pg.Pool, spoiled: WeakSet<pg.PoolClient>): void {
  const connect = pool.connect.bind(pool) as (callback?: unknown) => Promise<pg.PoolClient> | undefined;
  (pool as unknown as { connect: typeof connect }).connect = (callback) => {
    if (callback) return connect(callback);
    return connect()!.then((client) => {
      const release = client.release;
      client.release = (error?: Error | boolean) =>
        release(error || (spoiled.has(client) ? new Error('connection spoiled') : undefined));
      return client;
    });
  };
}

export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
