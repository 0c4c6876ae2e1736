import {
  decide,
  type BucketPolicy,
  type RateLimitDecision,
  type SharedBuckets,
  type SharedLease,
  type TokenBucketStore,
} from './token-bucket.ts';

/** What this replica holds of one key's shared bucket. */
interface Lease {
  /** Tokens taken out of the shared bucket and not spent yet: this replica's to spend. */
  tokens: number;
  /** Tokens held right after the last renewal. */
  size: number;
  /** Tokens spent since the last renewal: sizes the next one. */
  spent: number;
  /** After this (ms), unspent tokens go back to the shared bucket instead of being spent. */
  expiresAt: number;
  /** From this (ms) on, the next request renews the lease ahead of need. */
  renewAt: number;
  /** Tokens the shared bucket had left at the last renewal. */
  shared: number;
  /** The renewal in flight, shared by every request that waits for it. */
  renewal: Promise<SharedLease> | undefined;
}

export interface LeaseOptions {
  /** Most tokens one renewal takes; default a tenth of the burst. */
  maxLease?: number;
  /** How long a lease may be spent; default the time the bucket takes to refill `maxLease`. */
  leaseMs?: number;
  now?: () => number;
}

/**
 * D3's per-key token bucket, shared by every replica, without a round trip per request: a replica
 * takes tokens out of the shared bucket a few at a time (a lease) and spends them locally. The
 * limit still holds across replicas together, since a request is only ever allowed with a token
 * that was taken out of the shared bucket, and the shared bucket grants no more than it holds.
 *
 * Sizing: a key's first lease is one token; each renewal asks for twice what was spent since
 * the previous one, up to `maxLease`, so a busy key goes to the shared store about once per
 * `maxLease` requests, while a quiet key never holds more than a token or two that others could
 * have used. Unspent tokens go back to the shared bucket once the lease expires (at the next
 * renewal, or by the sweep for a key gone quiet), so a replica keeps them from the others for at
 * most `leaseMs`.
 *
 * Renewing ahead: once a lease is down to a quarter of its tokens, or three quarters of its time
 * are gone, the request that notices renews it in the background while the lease is still being
 * spent. So a key in steady use never waits for the shared store; only its first request, one
 * after a pause, or one finding the lease used up faster than a round trip do.
 *
 * With `maxLease` 1 (a burst under 20) every request goes to the shared store, and never ahead,
 * so small limits stay exact.
 */
export class LeasedTokenBuckets implements TokenBucketStore {
  private readonly leases = new Map<string, Lease>();
  private readonly shared: SharedBuckets;
  private readonly policy: BucketPolicy;
  private readonly maxLease: number;
  private readonly leaseMs: number;
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(shared: SharedBuckets, policy: BucketPolicy, options: LeaseOptions = {}) {
    this.shared = shared;
    this.policy = policy;
    this.maxLease = Math.max(1, Math.min(policy.burst, options.maxLease ?? Math.floor(policy.burst / 10)));
    this.leaseMs =
      options.leaseMs ?? Math.min(1_000, Math.max(100, (1_000 * this.maxLease) / policy.perSecond));
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => this.sweep(), Math.max(this.leaseMs, 250));
    this.sweeper.unref();
  }

  take(keyId: string): RateLimitDecision | Promise<RateLimitDecision> {
    const now = this.now();
    let lease = this.leases.get(keyId);
    if (lease && lease.tokens > 0 && now < lease.expiresAt) {
      const decision = this.spend(lease);
      if (this.maxLease > 1 && !lease.renewal && (lease.tokens * 4 <= lease.size || now >= lease.renewAt)) {
        // A failure here shows (and is logged) on the next renewal a request has to wait for.
        this.renew(keyId, lease).catch(() => {});
      }
      return decision;
    }
    if (!lease) {
      lease = { tokens: 0, size: 0, spent: 0, expiresAt: 0, renewAt: 0, shared: 0, renewal: undefined };
      this.leases.set(keyId, lease);
    }
    const renewed = lease;
    return this.renew(keyId, renewed).then((result) => {
      if (renewed.tokens > 0) return this.spend(renewed);
      if (result.granted === 0) return decide(this.policy, false, result.left);
      // The requests that waited for the same renewal spent it first: renew again.
      return this.take(keyId);
    });
  }

  private spend(lease: Lease): RateLimitDecision {
    lease.tokens--;
    lease.spent++;
    return decide(this.policy, true, Math.min(this.policy.burst, lease.tokens + lease.shared));
  }

  private renew(keyId: string, lease: Lease): Promise<SharedLease> {
    if (lease.renewal) return lease.renewal;
    // An expired lease gives back what is left of it in the same call; a live one (renewed
    // ahead of need) keeps it and adds the new tokens.
    let giveBack = 0;
    if (this.now() >= lease.expiresAt) {
      giveBack = lease.tokens;
      lease.tokens = 0;
    }
    const want = Math.min(this.maxLease, Math.max(1, 2 * lease.spent));
    lease.renewal = this.shared.lease(keyId, want, giveBack).then(
      (result) => {
        const now = this.now();
        lease.renewal = undefined;
        lease.tokens += result.granted;
        lease.size = lease.tokens;
        lease.spent = 0;
        lease.shared = result.left;
        lease.expiresAt = now + this.leaseMs;
        lease.renewAt = now + (this.leaseMs * 3) / 4;
        return result;
      },
      (error: unknown) => {
        lease.renewal = undefined;
        throw error;
      },
    );
    return lease.renewal;
  }

  /**
   * Forgets expired leases, giving their unspent tokens back to the shared bucket. A timer runs
   * it every `leaseMs` (at least 250 ms); public so that tests can run it on their own clock.
   */
  sweep(): Promise<unknown> {
    const now = this.now();
    const givingBack: Promise<unknown>[] = [];
    for (const [keyId, lease] of this.leases) {
      if (lease.renewal || now < lease.expiresAt) continue;
      this.leases.delete(keyId);
      // If this fails the tokens are lost until the bucket refills: the safe side.
      if (lease.tokens > 0) givingBack.push(this.shared.lease(keyId, 0, lease.tokens).catch(() => {}));
    }
    return Promise.all(givingBack);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    for (const lease of this.leases.values()) lease.expiresAt = 0;
    await Promise.allSettled([...this.leases.values()].map((lease) => lease.renewal));
    await this.sweep();
    await this.shared.close();
  }
}
