import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import { createDb, migrateToLatest, migrations, type Database } from '@trips/db';

/**
 * Tests read the Postgres to use from DATABASE_URL (the machine's own, or CI's); it must allow
 * CREATE DATABASE. Each test file gets a fresh database cloned from a migrated template, which
 * takes tens of milliseconds instead of re-running every migration. A test that stops its Postgres
 * has a server of its own (postgres-replica.ts) and passes that server's URL instead.
 */
export const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The template's name carries a hash of the migrations, so a changed migration makes a new one. */
function templateName(): string {
  const source = Object.entries(migrations)
    .map(([name, m]) => name + m.up.toString())
    .join('\n');
  return `trips_tpl_${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;
}

function urlFor(server: string, database: string): string {
  const url = new URL(server);
  url.pathname = `/${database}`;
  return url.toString();
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>, server = adminUrl): Promise<T> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs one statement as the admin user (for tests that cut a database off, say). */
export async function adminQuery(statement: string): Promise<void> {
  await withAdmin((admin) => admin.query(statement));
}

/** Creates the migrated template once per migration set; safe when several test runs race. */
export async function ensureTemplate(server = adminUrl): Promise<string> {
  const name = templateName();
  await withAdmin(async (admin) => {
    await admin.query('SELECT pg_advisory_lock(7263001)');
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount) return;
      const building = `${name}_building`;
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${building}`);
      const db = createDb(urlFor(server, building), { max: 1 });
      try {
        await migrateToLatest(db);
      } finally {
        await db.destroy();
      }
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    } finally {
      await admin.query('SELECT pg_advisory_unlock(7263001)');
    }
  }, server);
  return name;
}

export interface TestDatabase {
  name: string;
  url: string;
  db: Kysely<Database>;
  /** Closes this file's pool and drops its database. */
  drop(): Promise<void>;
}

/** A fresh database on `server` (the Postgres at DATABASE_URL unless a test has its own). */
export async function createTestDatabase(server = adminUrl): Promise<TestDatabase> {
  const template = await ensureTemplate(server);
  const name = `trips_test_${randomBytes(6).toString('hex')}`;
  await withAdmin(async (admin) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        return;
      } catch (error) {
        // 55006: another clone of the same template is being made this instant; try again.
        if ((error as { code?: string }).code !== '55006' || attempt > 20) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
      }
    }
  }, server);
  const url = urlFor(server, name);
  const db = createDb(url, { max: 5, applicationName: 'trips-test' });
  return {
    name,
    url,
    db,
    drop: async () => {
      await db.destroy();
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), server);
    },
  };
}

/** How often a table has been vacuumed by hand (autovacuum's are counted apart), and its dead rows. */
export async function vacuumStats(
  db: Kysely<Database>,
  table: string,
): Promise<{ count: number; dead: number }> {
  const { rows } = await sql<{ n: string; dead: string }>`
    SELECT vacuum_count AS n, n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname = ${table}`.execute(
    db,
  );
  return { count: Number(rows[0]!.n), dead: Number(rows[0]!.dead) };
}
