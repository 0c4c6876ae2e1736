import CircuitBreaker from 'opossum';
import type { AttemptResult } from '../sender.ts';

export interface BreakerOptions {
  /** The breaker opens when more than this share of recent attempts failed... */
  errorThresholdPercentage: number;
  /** ...once at least this many were made in the rolling window, */
  volumeThreshold: number;
  rollingWindowMs: number;
  /** and lets one trial through after this long. */
  cooldownMs: number;
}

/** A failed attempt, thrown inside the breaker so it counts the failure. */
class AttemptFailed extends Error {
  readonly result: AttemptResult;
  constructor(result: AttemptResult) {
    super(result.error ?? 'failed');
    this.result = result;
  }
}

/**
 * One webhook's circuit breaker in this process: once most of its recent attempts failed, no
 * attempt at all until a trial every cooldown. A receiver asking us to slow down (429, 503) is
 * alive and answering: its pace handles that (pace.ts), and such answers never open the breaker.
 * The durable switch-off after WEBHOOK_FAILURE_WINDOW is a separate policy (switch-off.ts).
 */
export class Breaker {
  private readonly breaker: CircuitBreaker<[() => Promise<AttemptResult>], AttemptResult>;

  constructor(options: BreakerOptions, onTrialDue: () => void) {
    this.breaker = new CircuitBreaker(
      async (send: () => Promise<AttemptResult>) => {
        const result = await send();
        if (result.error !== null && !result.backPressure) throw new AttemptFailed(result);
        return result;
      },
      {
        timeout: false, // the sender's own timeout (WEBHOOK_TIMEOUT) bounds every attempt
        errorThresholdPercentage: options.errorThresholdPercentage,
        volumeThreshold: options.volumeThreshold,
        rollingCountTimeout: options.rollingWindowMs,
        resetTimeout: options.cooldownMs,
        // Only the counts decide; latency percentiles and snapshot events were work on every
        // attempt that nothing reads.
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
      },
    );
    this.breaker.on('halfOpen', onTrialDue);
  }

  get open(): boolean {
    return this.breaker.opened;
  }

  /** Half-open: the next attempt is the one trial. */
  get trial(): boolean {
    return this.breaker.halfOpen;
  }

  /** Whether an attempt may start now: closed, or half-open with its trial not yet out. */
  get admits(): boolean {
    if (this.breaker.opened) return false;
    return !this.breaker.halfOpen || this.breaker.pendingClose;
  }

  /** Runs the attempt through the breaker; undefined when the breaker refused it after all. */
  async fire(send: () => Promise<AttemptResult>): Promise<AttemptResult | undefined> {
    try {
      return await this.breaker.fire(send);
    } catch (error) {
      // EOPENBREAKER: the breaker opened while this waited, or a half-open trial is already out.
      if (!(error instanceof AttemptFailed)) return undefined;
      return error.result;
    }
  }

  shutdown(): void {
    this.breaker.shutdown();
  }
}
