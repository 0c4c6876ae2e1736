// Creates the database named in DATABASE_URL if it does not exist yet (first start on a machine).
import pg from 'pg';
import { EnvReader } from '@trips/runtime';

const env = new EnvReader();
const databaseUrl = env.read('DATABASE_URL');
env.done();
const target = new URL(databaseUrl);
const name = decodeURIComponent(target.pathname.slice(1));
const admin = new URL(target);
admin.pathname = '/postgres';
const client = new pg.Client({ connectionString: admin.toString() });
await client.connect();
try {
  const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (!rowCount) {
    await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
    console.log(`created database ${name}`);
  }
} finally {
  await client.end();
}
