import CircuitBreaker from 'opossum';
import type { AttemptResult } from './sender.ts';

export interface EndpointProtection {
  /** Attempts in flight to one webhook from this process. */
  concurrency: number;
  /**
   * An endpoint whose attempts take longer than this on average is slow: a caller that holds a
   * RabbitMQ message while it attempts (`inline`) is refused, so a slow webhook's attempts never
   * hold the shared queues' messages, and its deliveries wait in its lane instead (lanes.ts).
   */
  inlineMaxMs: number;
  /**
   * How long a caller that holds a RabbitMQ message may wait in memory for a slot of a busy
   * endpoint, at most (0: never). A burst (a recorder's batch of one agency's events) then goes out
   * at the endpoint's pace with no write at all; what could not start in time, or would not by the
   * endpoint's recent pace, goes to the lane instead. The bound keeps the prefetch moving: a
   * message waits this long at most, so another agency's event never waits behind a full line.
   */
  inlineWaitMs: number;
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

/** Why a delivery was not attempted now. It waits in its webhook's lane; it is never dropped. */
export type DeferReason = 'circuit_open' | 'endpoint_busy' | 'endpoint_slow';

export type GuardedResult = { attempted: AttemptResult } | { deferred: DeferReason };

/** A failed attempt, thrown inside the breaker so it counts the failure. */
class AttemptFailed extends Error {
  readonly result: AttemptResult;
  constructor(result: AttemptResult) {
    super(result.error ?? 'failed');
    this.result = result;
  }
}

/** Weight of the newest attempt in the running mean of attempt durations. */
const DURATION_WEIGHT = 0.2;

/**
 * Short-term protection of one webhook endpoint, per dispatcher process (architecture example 6):
 * a concurrency cap and a circuit breaker, so a dead endpoint stops taking attempts at all once it
 * has failed enough. An attempt starts now or is refused with a reason, and the caller puts the
 * delivery in the webhook's lane (lanes.ts), which is served as this endpoint has room. Only a
 * caller holding a RabbitMQ message at a healthy, busy endpoint waits for a slot, briefly and in
 * order (the line): otherwise every burst's surplus would be written to the lane and read back.
 * The durable switch-off after WEBHOOK_FAILURE_WINDOW is a separate policy (switch-off.ts) that
 * reads the attempts, not this state.
 */
class Endpoint {
  private readonly breaker: CircuitBreaker<[() => Promise<AttemptResult>], AttemptResult>;
  private readonly concurrency: number;
  private readonly inlineMaxMs: number;
  private readonly inlineWaitMs: number;
  /** Attempts running, and those handed a slot as it freed. */
  private active = 0;
  /** Inline callers waiting for a slot, oldest first; each is told whether it got one. */
  private readonly line: ((gotSlot: boolean) => void)[] = [];
  /** Whose turn the last freed slot was, while the line had callers (freeSlot). */
  private laneTurn = false;
  /**
   * The last attempt's answer trickled (its body cut after the grace): each attempt then costs a
   * new TLS handshake, on both sides, and ten at a time cost the machine what every other webhook
   * needs. Such an endpoint gets one slot until an answer arrives whole again.
   */
  private trickling = false;
  /**
   * Answers received (any status). A new endpoint starts with one slot, doubled with each answer up
   * to the cap (slow start, as TCP's): a burst for an endpoint that never answers, or answers
   * slowly, opens one connection instead of every slot's, each a TLS handshake.
   */
  private answered = 0;
  /** Running mean of attempt durations, ms; unknown until one finished. */
  private meanDurationMs: number | undefined;
  private readonly onRoom: () => void;
  lastUsed = Date.now();

  constructor(protection: EndpointProtection, onRoom: () => void) {
    this.onRoom = onRoom;
    this.concurrency = protection.concurrency;
    this.inlineMaxMs = protection.inlineMaxMs;
    this.inlineWaitMs = protection.inlineWaitMs;
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
    // A trial is due: the lane's next delivery is it.
    this.breaker.on('halfOpen', onRoom);
  }

  get idle(): boolean {
    return this.active === 0;
  }

  get open(): boolean {
    return this.breaker.opened;
  }

  /** Half-open: the next attempt is the breaker's one trial. */
  get trial(): boolean {
    return this.breaker.halfOpen;
  }

  /** How many attempts could start now: free slots, none while open, one trial when half-open. */
  get room(): number {
    if (this.breaker.opened) return 0;
    if (this.breaker.halfOpen) return this.breaker.pendingClose && this.active === 0 ? 1 : 0;
    return Math.max(0, this.slots - this.active);
  }

  async run(send: () => Promise<AttemptResult>, inline: boolean): Promise<GuardedResult> {
    this.lastUsed = Date.now();
    if (this.breaker.opened) return { deferred: 'circuit_open' };
    if (inline && this.meanDurationMs !== undefined && this.meanDurationMs > this.inlineMaxMs)
      return { deferred: 'endpoint_slow' };
    if (this.active < this.slots) this.active++;
    else if (!inline || !(await this.waitForSlot())) return { deferred: 'endpoint_busy' };
    const startedAt = performance.now();
    try {
      const result = await this.breaker.fire(send);
      this.observe(performance.now() - startedAt, result);
      return { attempted: result };
    } catch (error) {
      // EOPENBREAKER: the breaker opened while this waited, or a half-open trial is already out.
      if (!(error instanceof AttemptFailed)) return { deferred: 'circuit_open' };
      this.observe(performance.now() - startedAt, error.result);
      return { attempted: error.result };
    } finally {
      this.freeSlot();
    }
  }

  /**
   * Waits in the line for a slot, up to inlineWaitMs; resolves true with the slot taken. Only as
   * many wait as the endpoint's recent pace serves within that time, so a line that could not
   * clear in time is not joined at all.
   */
  private waitForSlot(): Promise<boolean> {
    // Unmeasured yet (the first attempts are still out): the time bound alone.
    const served =
      this.meanDurationMs === undefined ? Infinity : this.inlineWaitMs / Math.max(1, this.meanDurationMs);
    if (this.line.length >= Math.floor(this.slots * served)) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = (gotSlot: boolean) => {
        clearTimeout(timer);
        resolve(gotSlot);
      };
      const timer = setTimeout(() => {
        this.line.splice(this.line.indexOf(waiter), 1);
        resolve(false);
      }, this.inlineWaitMs);
      this.line.push(waiter);
    });
  }

  /**
   * An attempt ended. While callers wait in the line, the freed slot goes to the lane and to the
   * line in turn, so that neither a steady stream starves the lane's backlog nor the backlog makes
   * the line wait its longest; the lane takes its turn only if it has a delivery ready now.
   */
  private freeSlot(): void {
    this.active--;
    if (this.line.length === 0) return this.onRoom();
    this.laneTurn = !this.laneTurn;
    if (this.laneTurn) this.onRoom();
    if (this.active < this.slots && this.line.length > 0) {
      this.active++;
      this.line.shift()!(true);
    } else if (!this.laneTurn) this.onRoom();
  }

  /** Attempts that may run at once: one while the endpoint trickles its answers; see `answered`. */
  private get slots(): number {
    return this.trickling ? 1 : Math.min(this.concurrency, 2 ** this.answered);
  }

  private observe(durationMs: number, result: AttemptResult): void {
    this.trickling = result.bodyCut === true;
    if (result.statusCode !== null) this.answered++;
    this.meanDurationMs =
      this.meanDurationMs === undefined
        ? durationMs
        : this.meanDurationMs + DURATION_WEIGHT * (durationMs - this.meanDurationMs);
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
  private roomListener: (webhookId: string) => void = () => {};

  constructor(protection: EndpointProtection, idleMs = 10 * 60_000) {
    this.protection = protection;
    // Forget endpoints unused for a while, so many webhooks do not mean ever more timers and memory.
    this.sweeper = setInterval(() => this.forgetIdle(idleMs), Math.min(idleMs, 60_000));
    this.sweeper.unref();
  }

  /** Told whenever a webhook may have room again: an attempt ended, or its breaker lets a trial through. */
  onRoom(listener: (webhookId: string) => void): void {
    this.roomListener = listener;
  }

  /**
   * Attempts now if the webhook has room; otherwise answers why not. `inline`: the caller holds a
   * RabbitMQ message meanwhile, so a slow endpoint refuses it (EndpointProtection.inlineMaxMs), and
   * a busy one lets it wait for a slot a little while (EndpointProtection.inlineWaitMs).
   */
  run(webhookId: string, send: () => Promise<AttemptResult>, inline: boolean): Promise<GuardedResult> {
    let endpoint = this.byWebhook.get(webhookId);
    if (!endpoint) {
      endpoint = new Endpoint(this.protection, () => this.roomListener(webhookId));
      this.byWebhook.set(webhookId, endpoint);
    }
    return endpoint.run(send, inline);
  }

  /** How many attempts to the webhook could start now (EndpointProtection): one, if it is new. */
  room(webhookId: string): number {
    return this.byWebhook.get(webhookId)?.room ?? 1;
  }

  /** Whether the webhook's breaker is open (no attempt until its trial). */
  isOpen(webhookId: string): boolean {
    return this.byWebhook.get(webhookId)?.open ?? false;
  }

  /** Whether the webhook's next attempt is its breaker's trial. */
  isTrial(webhookId: string): boolean {
    return this.byWebhook.get(webhookId)?.trial ?? false;
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
