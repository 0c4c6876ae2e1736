import { sql, type Kysely } from 'kysely';
import { Redis } from 'ioredis';
import type { Database } from '@trips/db';

/** Policy of D3: a bucket of `burst` tokens per key, refilled at `perSecond`. */
export interface BucketPolicy {
  perSecond: number;
  burst: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one token is back (whole, at least 1), for Retry-After on a 429. */
  retryAfterSeconds: number;
}

/** A store shared by every API replica, so the limit holds across them together (D3). */
export interface TokenBucketStore {
  take(keyId: string): Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export function decide(policy: BucketPolicy, allowed: boolean, tokensLeft: number): RateLimitDecision {
  return {
    allowed,
    limit: policy.burst,
    remaining: Math.max(0, Math.floor(tokensLeft)),
    resetSeconds: Math.ceil((policy.burst - tokensLeft) / policy.perSecond),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokensLeft) / policy.perSecond)),
  };
}

/**
 * One round trip, atomic in Redis. The clock is Redis' own (TIME), so replicas whose clocks
 * disagree still refill one bucket consistently.
 */
const TAKE_TOKEN_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now_ms
tokens = math.min(burst, tokens + math.max(0, now_ms - at) * rate / 1000)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now_ms)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
`;

type RedisWithTake = Redis & {
  takeToken(key: string, perSecond: number, burst: number): Promise<[number, string]>;
};

export class RedisTokenBucketStore implements TokenBucketStore {
  private readonly redis: RedisWithTake;
  private readonly policy: BucketPolicy;

  constructor(redisUrl: string, policy: BucketPolicy) {
    this.policy = policy;
    // No offline queue and a short timeout: when Redis is away a request should learn it in
    // milliseconds (and be let through, see middleware.ts), not wait for a reconnect.
    const redis = new Redis(redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 250,
    });
    redis.on('error', () => {}); // reported per request by the middleware; reconnects by itself
    redis.defineCommand('takeToken', { numberOfKeys: 1, lua: TAKE_TOKEN_LUA });
    this.redis = redis as RedisWithTake;
  }

  async take(keyId: string): Promise<RateLimitDecision> {
    const [allowed, tokens] = await this.redis.takeToken(
      `ratelimit:${keyId}`,
      this.policy.perSecond,
      this.policy.burst,
    );
    return decide(this.policy, allowed === 1, Number(tokens));
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** The same bucket as one UPSERT in Postgres, for deployments without Redis. */
export class PostgresTokenBucketStore implements TokenBucketStore {
  private readonly db: Kysely<Database>;
  private readonly policy: BucketPolicy;

  constructor(db: Kysely<Database>, policy: BucketPolicy) {
    this.db = db;
    this.policy = policy;
  }

  async take(keyId: string): Promise<RateLimitDecision> {
    const { perSecond, burst } = this.policy;
    const refilled = sql`least(${burst}::float8, b.tokens + extract(epoch FROM clock_timestamp() - b.refreshed_at) * ${perSecond}::float8)`;
    const { rows } = await sql<{ tokens: number; allowed: boolean }>`
      INSERT INTO rate_limit_buckets AS b (key_id, tokens, allowed, refreshed_at)
      VALUES (${keyId}, ${burst - 1}::float8, true, clock_timestamp())
      ON CONFLICT (key_id) DO UPDATE SET
        tokens = CASE WHEN ${refilled} >= 1 THEN ${refilled} - 1 ELSE ${refilled} END,
        allowed = ${refilled} >= 1,
        refreshed_at = clock_timestamp()
      RETURNING tokens, allowed
    `.execute(this.db);
    const row = rows[0]!;
    return decide(this.policy, row.allowed, row.tokens);
  }

  async close(): Promise<void> {}
}
