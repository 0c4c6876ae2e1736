import CircuitBreaker from 'opossum';
import type { AttemptResult } from './delivery.ts';

export interface EndpointProtection {
  /** Attempts in flight to one webhook; more wait their turn while it is expected soon (Endpoint). */
  concurrency: number;
  /** The longest a delivery waits in line for a slot: DISPATCHER_BUSY_DELAYS' first. */
  maxWaitMs: number;
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
 * Where a delivery comes from: a first attempt made at fan-out, or a delivery taken from the
 * deliveries queue (a retry, or one a full line sent there). Each source may always have up to
 * `concurrency` deliveries waiting, so a steady stream of events cannot keep the queued deliveries
 * out of a busy webhook's line.
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

interface Waiter {
  source: Source;
  /** performance.now() past which it leaves the line. */
  deadline: number;
  /** true: a slot is its; false: it waited maxWaitMs in vain. */
  start: (started: boolean) => void;
}

/** Weight of the newest attempt in the running mean of attempt durations. */
const DURATION_WEIGHT = 0.2;

/**
 * Short-term protection of one webhook endpoint, per dispatcher process (architecture example 6):
 * a concurrency cap with a line measured in time, and a circuit breaker, so a dead endpoint stops
 * holding workers at all once it has failed enough. Both only defer deliveries; the durable
 * switch-off after WEBHOOK_FAILURE_WINDOW is a separate policy (switch-off.ts) that reads the
 * attempts, not this state.
 *
 * The line: with every slot taken, a delivery waits for one when its turn is expected within
 * maxWaitMs, which is how long going round the first busy delay queue would take anyway. Turns come
 * at one per (mean attempt duration / concurrency; none known before an attempt finished), or
 * slower if no slot has freed for longer than that: after its first second a hanging endpoint gets
 * no more waiters than the floor (`concurrency` per source), so its
 * waiters do not hold the events of other webhooks. A healthy endpoint that is merely saturated (a
 * burst) gets a long line, and the burst waits its turn instead of going round a delay queue. No
 * delivery waits longer than maxWaitMs, whatever the estimate said: then it is put off.
 */
class Endpoint {
  private readonly breaker: CircuitBreaker<[() => Promise<AttemptResult>], AttemptResult>;
  private readonly concurrency: number;
  private readonly maxWaitMs: number;
  private active = 0;
  private readonly waiting: Waiter[] = [];
  private readonly waitingFrom: Record<Source, number> = { fan_out: 0, deliveries_queue: 0 };
  /** Running mean of attempt durations, ms; unknown until one finished. */
  private meanDurationMs: number | undefined;
  /** When a slot last freed or, if later, when the last free slot was taken. */
  private lastTurnAt = 0;
  private evictTimer: NodeJS.Timeout | undefined;
  lastUsed = Date.now();

  constructor(protection: EndpointProtection) {
    this.concurrency = protection.concurrency;
    this.maxWaitMs = protection.maxWaitMs;
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
    if (this.active < this.concurrency) {
      if (++this.active === this.concurrency) this.lastTurnAt = performance.now();
    } else if (!this.mayWait(source) || !(await this.wait(source))) {
      return { deferred: 'endpoint_busy' };
    }
    const startedAt = performance.now();
    let attempted = false;
    try {
      const result = await this.breaker.fire(send);
      attempted = true;
      return { attempted: result };
    } catch (error) {
      // EOPENBREAKER: opened while this one waited, or a half-open trial is already out.
      if (!(error instanceof AttemptFailed)) return { deferred: 'circuit_open' };
      attempted = true;
      return { attempted: error.result };
    } finally {
      this.lastTurnAt = performance.now();
      if (attempted) this.observe(this.lastTurnAt - startedAt);
      // Hand the slot straight to the next waiter, so `active` never dips and lets a newcomer jump the queue.
      const next = this.waiting.shift();
      if (next) {
        this.waitingFrom[next.source]--;
        next.start(true);
      } else this.active--;
    }
  }

  private observe(durationMs: number): void {
    this.meanDurationMs =
      this.meanDurationMs === undefined
        ? durationMs
        : this.meanDurationMs + DURATION_WEIGHT * (durationMs - this.meanDurationMs);
  }

  /** Whether a delivery finding every slot taken may wait for one (see the class comment). */
  private mayWait(source: Source): boolean {
    if (this.waitingFrom[source] < this.concurrency) return true;
    // Before any attempt has finished (a new process, say), only the time since the slots filled
    // tells: refusing all but the floor then put a restarted dispatcher's whole backlog off.
    const turnEveryMs = Math.max(
      (this.meanDurationMs ?? 0) / this.concurrency,
      performance.now() - this.lastTurnAt,
    );
    return (this.waiting.length + 1) * turnEveryMs <= this.maxWaitMs;
  }

  /** Waits in line; false once maxWaitMs passed without a slot. */
  private wait(source: Source): Promise<boolean> {
    this.waitingFrom[source]++;
    return new Promise((start) => {
      this.waiting.push({ source, deadline: performance.now() + this.maxWaitMs, start });
      this.evictTimer ??= setTimeout(this.evictOverdue, this.maxWaitMs).unref();
    });
  }

  /** Sends away the waiters past their deadline; deadlines grow along the line, so from the front. */
  private readonly evictOverdue = () => {
    this.evictTimer = undefined;
    const now = performance.now();
    while (this.waiting.length > 0 && this.waiting[0]!.deadline <= now) {
      const overdue = this.waiting.shift()!;
      this.waitingFrom[overdue.source]--;
      overdue.start(false);
    }
    if (this.waiting.length > 0)
      this.evictTimer = setTimeout(this.evictOverdue, this.waiting[0]!.deadline - now).unref();
  };

  shutdown(): void {
    clearTimeout(this.evictTimer);
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
   * Runs the attempt when the webhook has a free slot, or once one frees if it may wait for one
   * (Endpoint); otherwise it is `endpoint_busy`.
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
