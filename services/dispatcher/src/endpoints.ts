import CircuitBreaker from 'opossum';
import type { AttemptResult } from './delivery.ts';

export interface EndpointProtection {
  /** Attempts in flight to one webhook; as many again may wait per source (Source), the rest are not made now. */
  concurrency: number;
  breaker: {
    /** The breaker opens when more than this share of recent attempts failed... */
    errorThresholdPercentage: number;
    /** ...once at least this many were made in the rolling window, */
    volumeThreshold: number;
    rollingWindowMs: number;
    /** and lets one trial through after this long. */
    cooldownMs: number;
  };
}

/**
 * Where a delivery comes from, which is also the line it waits in: a first attempt made at
 * fan-out, or a delivery taken from the deliveries queue (a retry, or one a full line sent there).
 * Each has a line of its own, served oldest first, so a steady stream of events cannot keep the
 * queued deliveries out of a busy webhook's line (they would go round a delay queue again and
 * again).
 */
export type Source = 'fan_out' | 'deliveries_queue';

/** Why a delivery was not attempted now. It takes the retry path; it is never dropped. */
export type DeferReason = 'circuit_open' | 'endpoint_busy';

export type GuardedResult = { attempted: AttemptResult } | { deferred: DeferReason };

/** A failed attempt, thrown inside the breaker so it counts the failure. */
class AttemptFailed extends Error {
  readonly result: AttemptResult;
  constructor(result: AttemptResult) {
    super(result.error ?? 'failed');
    this.result = result;
  }
}

/**
 * Short-term protection of one webhook endpoint, per dispatcher process (architecture example 6):
 * a concurrency cap, so a slow endpoint holds at most cap attempts and cap waiting from each source
 * of the prefetched messages (3 × cap in all), and a
 * circuit breaker, so a dead one stops holding workers at all once it has failed enough. Both only
 * defer deliveries; the durable switch-off after WEBHOOK_FAILURE_WINDOW is a separate policy
 * (switch-off.ts) that reads the attempts, not this state.
 */
class Endpoint {
  private readonly breaker: CircuitBreaker<[() => Promise<AttemptResult>], AttemptResult>;
  private readonly concurrency: number;
  private active = 0;
  private readonly waiting: { source: Source; start: () => void }[] = [];
  private readonly waitingFrom: Record<Source, number> = { fan_out: 0, deliveries_queue: 0 };
  lastUsed = Date.now();

  constructor(protection: EndpointProtection) {
    this.concurrency = protection.concurrency;
    this.breaker = new CircuitBreaker(
      async (send: () => Promise<AttemptResult>) => {
        const result = await send();
        if (result.error !== null) throw new AttemptFailed(result);
        return result;
      },
      {
        timeout: false, // the sender's own timeout (WEBHOOK_TIMEOUT) bounds every attempt
        errorThresholdPercentage: protection.breaker.errorThresholdPercentage,
        volumeThreshold: protection.breaker.volumeThreshold,
        rollingCountTimeout: protection.breaker.rollingWindowMs,
        resetTimeout: protection.breaker.cooldownMs,
        // Only the counts decide; latency percentiles and snapshot events were work on every
        // attempt that nothing reads.
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
      },
    );
  }

  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  get open(): boolean {
    return this.breaker.opened;
  }

  async run(send: () => Promise<AttemptResult>, source: Source): Promise<GuardedResult> {
    this.lastUsed = Date.now();
    if (this.breaker.opened) return { deferred: 'circuit_open' };
    if (this.active >= this.concurrency) {
      if (this.waitingFrom[source] >= this.concurrency) return { deferred: 'endpoint_busy' };
      this.waitingFrom[source]++;
      await new Promise<void>((start) => this.waiting.push({ source, start }));
    } else {
      this.active++;
    }
    try {
      return { attempted: await this.breaker.fire(send) };
    } catch (error) {
      if (error instanceof AttemptFailed) return { attempted: error.result };
      // EOPENBREAKER: opened while this one waited, or a half-open trial is already out.
      return { deferred: 'circuit_open' };
    } finally {
      // Hand the slot straight to the next waiter, so `active` never dips and lets a newcomer jump the queue.
      const next = this.waiting.shift();
      if (next) {
        this.waitingFrom[next.source]--;
        next.start();
      } else this.active--;
    }
  }

  shutdown(): void {
    this.breaker.shutdown();
  }
}

/** The per-webhook protections of this process, made on first use and forgotten when idle. */
export class Endpoints {
  private readonly protection: EndpointProtection;
  private readonly byWebhook = new Map<string, Endpoint>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(protection: EndpointProtection, idleMs = 10 * 60_000) {
    this.protection = protection;
    // Forget endpoints unused for a while, so many webhooks do not mean ever more timers and memory.
    this.sweeper = setInterval(() => this.forgetIdle(idleMs), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  /**
   * Runs the attempt when the webhook has a free slot, or once one frees if fewer than
   * `concurrency` others from the same source are waiting; otherwise it is `endpoint_busy`.
   */
  run(webhookId: string, send: () => Promise<AttemptResult>, source: Source): Promise<GuardedResult> {
    let endpoint = this.byWebhook.get(webhookId);
    if (!endpoint) {
      endpoint = new Endpoint(this.protection);
      this.byWebhook.set(webhookId, endpoint);
    }
    return endpoint.run(send, source);
  }

  /** How many breakers are open now (a metric). */
  openCount(): number {
    let open = 0;
    for (const endpoint of this.byWebhook.values()) if (endpoint.open) open++;
    return open;
  }

  private forgetIdle(idleMs: number): void {
    const cutoff = Date.now() - idleMs;
    for (const [id, endpoint] of this.byWebhook) {
      if (endpoint.idle && !endpoint.open && endpoint.lastUsed < cutoff) {
        endpoint.shutdown();
        this.byWebhook.delete(id);
      }
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const endpoint of this.byWebhook.values()) endpoint.shutdown();
    this.byWebhook.clear();
  }
}
