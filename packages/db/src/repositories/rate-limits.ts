import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** A key's token bucket after a take: the tokens (fractional) left, and whether the take was granted. */
export interface BucketTake {
  tokens: number;
  allowed: boolean;
}

/**
 * One statement on a key's token bucket (rate_limit_buckets, migration 0004), atomic: refills it
 * at `perSecond` by the database's clock up to `burst`, puts back `giveBack` unspent tokens, and
 * takes out `want` tokens if that many are there, else none. A key's first take starts it full.
 */
export async function takeBucketTokens(
  db: Kysely<Database>,
  input: { keyId: string; want: number; giveBack: number; perSecond: number; burst: number },
): Promise<BucketTake> {
  const { keyId, want, giveBack, perSecond, burst } = input;
  const refilled = sql`least(${burst}::float8, b.tokens + greatest(0, extract(epoch FROM clock_timestamp() - b.refreshed_at)) * ${perSecond}::float8 + ${giveBack}::float8)`;
  const { rows } = await sql<{ tokens: number; allowed: boolean }>`
      INSERT INTO rate_limit_buckets AS b (key_id, tokens, allowed, refreshed_at)
      VALUES (${keyId}, ${burst - want}::float8, true, clock_timestamp())
      ON CONFLICT (key_id) DO UPDATE SET
        tokens = CASE WHEN ${refilled} >= ${want}::float8 THEN ${refilled} - ${want}::float8 ELSE ${refilled} END,
        allowed = ${refilled} >= ${want}::float8,
        refreshed_at = clock_timestamp()
      RETURNING tokens, allowed
    `.execute(db);
  return rows[0]!;
}
