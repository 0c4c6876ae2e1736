import { sql, type Kysely } from 'kysely';

// Token buckets for RATE_LIMIT_STORE=postgres, the alternative to Redis for deployments without
// it (Redis is the default: it keeps the tokens out of the database, and renewing a lease there
// takes no pool connection). UNLOGGED: a bucket is worth nothing after a crash, and skipping the WAL
// makes each request's update cheaper.
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE UNLOGGED TABLE rate_limit_buckets (
      key_id text PRIMARY KEY,
      tokens double precision NOT NULL,
      -- Whether the last take found a whole token: the upsert's only way to report it.
      allowed boolean NOT NULL,
      refreshed_at timestamptz NOT NULL
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE rate_limit_buckets`.execute(db);
}
