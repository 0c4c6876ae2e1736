import type { Kysely } from 'kysely';
import { Redis } from 'ioredis';
import type { Database } from '@trips/db';
import { takeBucketTokens, type BucketTake } from '@trips/db/rate-limits';

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

/**
 * Takes one token of a key's bucket for a request. A decision is returned directly when the
 * replica can make it alone (see leases.ts), as a promise when it had to ask the shared store.
 */
export interface TokenBucketStore {
  take(keyId: string): RateLimitDecision | Promise<RateLimitDecision>;
  close(): Promise<void>;
}

export function decide(policy: BucketPolicy, allowed: boolean, tokensLeft: number): RateLimitDecision {
  return {
    allowed,
    limit: policy.burst,
    remaining: Math.max(0, Math.floor(tokensLeft)),
    resetSeconds: Math.max(0, Math.ceil((policy.burst - tokensLeft) / policy.perSecond)),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokensLeft) / policy.perSecond)),
  };
}

export interface SharedLease {
  /** Whole tokens taken out of the shared bucket for the caller to spend, 0 to `want`. */
  granted: number;
  /** Tokens (fractional) left in the shared bucket once `granted` were taken out. */
  left: number;
}

/**
 * The buckets every API replica shares, so the limit holds across them together (D3). One call
 * refills a key's bucket, puts back `giveBack` unspent tokens of an earlier lease, and takes out
 * up to `want` whole tokens, atomically: the tokens granted to all replicas together never exceed
 * what the bucket held.
 */
export interface SharedBuckets {
  lease(keyId: string, want: number, giveBack: number): Promise<SharedLease>;
  /** True once the store can answer a lease, false if it still cannot after `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * One round trip, atomic in Redis. The clock is Redis' own (TIME), so replicas whose clocks
 * disagree still refill one bucket consistently. Unspent tokens given back are capped at the
 * burst like any refill, which leaves the bucket exactly as if they had never been taken.
 */
const LEASE_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local give_back = tonumber(ARGV[4])
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now_ms
tokens = math.min(burst, tokens + math.max(0, now_ms - at) * rate / 1000 + give_back)
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now_ms)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {granted, tostring(tokens)}
`;

type RedisWithLease = Redis & {
  leaseTokens(
    key: string,
    perSecond: number,
    burst: number,
    want: number,
    giveBack: number,
  ): Promise<[number, string]>;
};

export class RedisBuckets implements SharedBuckets {
  private readonly redis: RedisWithLease;
  private readonly policy: BucketPolicy;

  constructor(redisUrl: string, policy: BucketPolicy) {
    this.policy = policy;
    // No offline queue and a short timeout: when Redis is away a request should learn it in
    // milliseconds (and be let through, see middleware.ts), not wait for a reconnect.
    // Auto-pipelining sends the calls of one event-loop turn (several keys' renewals, the
    // give-backs of a sweep) as one write.
    const redis = new Redis(redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 250,
      enableAutoPipelining: true,
    });
    redis.on('error', () => {}); // reported per request by the middleware; reconnects by itself
    redis.defineCommand('leaseTokens', { numberOfKeys: 1, lua: LEASE_LUA });
    this.redis = redis as RedisWithLease;
  }

  async lease(keyId: string, want: number, giveBack: number): Promise<SharedLease> {
    const [granted, left] = await this.redis.leaseTokens(
      `ratelimit:${keyId}`,
      this.policy.perSecond,
      this.policy.burst,
      want,
      giveBack,
    );
    return { granted, left: Number(left) };
  }

  /**
   * Waits for the connection that the constructor opened. Without the offline queue a lease
   * asked before it is up fails at once, and the request goes through unlimited (fail open):
   * the API awaits this before it listens, so a new replica limits its first requests too.
   * ioredis goes on reconnecting in the background whatever this answers.
   */
  ready(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const settle = (isReady: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(isReady);
      };
      const onReady = () => settle(true);
      const timer = setTimeout(() => settle(false), timeoutMs);
      this.redis.once('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/**
 * The same buckets as one UPSERT in Postgres, for deployments without Redis. An upsert can only
 * report the row it wrote, so a lease here is all or nothing (`allowed` says which); when fewer
 * than `want` tokens are left, the lease is asked again for as many as there were.
 */
export class PostgresBuckets implements SharedBuckets {
  private readonly db: Kysely<Database>;
  private readonly policy: BucketPolicy;

  constructor(db: Kysely<Database>, policy: BucketPolicy) {
    this.db = db;
    this.policy = policy;
  }

  private async upsert(keyId: string, want: number, giveBack: number): Promise<BucketTake> {
    const { perSecond, burst } = this.policy;
    return takeBucketTokens(this.db, { keyId, want, giveBack, perSecond, burst });
  }

  async lease(keyId: string, want: number, giveBack: number): Promise<SharedLease> {
    // want never exceeds the burst (leases.ts), so the first insert of a key always grants it.
    let row = await this.upsert(keyId, want, giveBack);
    while (!row.allowed && want > 1 && Math.floor(row.tokens) >= 1) {
      // Fewer than asked for: ask for what is there. want shrinks each time, so this ends.
      want = Math.min(want - 1, Math.floor(row.tokens));
      row = await this.upsert(keyId, want, 0);
    }
    return row.allowed ? { granted: want, left: row.tokens } : { granted: 0, left: row.tokens };
  }

  /** The API's own pool, which answered before the store was made: nothing more to wait for. */
  async ready(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}
