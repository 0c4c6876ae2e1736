import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createDb, migrations } from '@trips/db';
import { adminUrl } from '@trips/testkit';
import { cli, cliJson } from './helpers.ts';

// migrate needs a database without the schema, which a cloned test database is not.
const admin = createDb(adminUrl, { max: 1, applicationName: 'tripctl-test' });
const name = `tripctl_migrate_${randomBytes(6).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const env = { DATABASE_URL: url.toString() };

beforeAll(() => sql`CREATE DATABASE ${sql.id(name)}`.execute(admin));
afterAll(async () => {
  await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin);
  await admin.destroy();
});

test('applies every migration in order, then has nothing left to apply', async () => {
  expect(await cliJson(['migrate'], env)).toEqual({ applied: Object.keys(migrations) });

  const tables = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'trips'`;
  const db = createDb(env.DATABASE_URL, { max: 1 });
  try {
    expect((await tables.execute(db)).rows[0]!.n).toBe(1);
  } finally {
    await db.destroy();
  }

  expect(await cliJson(['migrate'], env)).toEqual({ applied: [] });
  const human = await cli(['migrate'], env);
  expect(human).toEqual({ code: 0, stdout: 'Already up to date: no migration to apply.\n', stderr: '' });
});
