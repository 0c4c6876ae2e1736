/** Reserves `count` send times `intervalMs` apart; answers how long from now the first is. */
export type ReserveSendTimes = (count: number, intervalMs: number) => Promise<number>;

/** Send times are reserved this far ahead at a time: a round trip per this much of the rate. */
const RESERVE_SPAN_MS = 200;
/**
 * A reserved send time not used within this of its time is let go: sent later, it would crowd the
 * ones after it. Timers fire a little late on a busy process; this keeps any second's deliveries
 * within a twentieth of a second's worth of the limit.
 */
const TOLERANCE_MS = 50;

/**
 * The owner's rate limit of one webhook (D10: at most N deliveries a second, by every dispatcher
 * together), as this process takes part in it. The limit is a schedule in Postgres shared by all
 * dispatchers (GCRA, repositories/webhook-pace.ts): each reserves the next few send times, a
 * fifth of a second's worth, 1/N s apart, and sends at those times only. So the deliveries of all
 * of them are spaced 1/N s apart wherever they come from, and any second holds at most N of them
 * (a little over, by a time sent late within its tolerance). A time not used in time is lost, which
 * only ever sends fewer.
 */
export class OwnerRate {
  private readonly reserve: ReserveSendTimes;
  /** Deliveries a second; undefined: no limit. */
  limit: number | undefined;
  /** Send times reserved and not used yet, ascending (ms, this process's clock). */
  private times: number[] = [];
  private reserving: Promise<void> | undefined;

  constructor(reserve: ReserveSendTimes) {
    this.reserve = reserve;
  }

  /** The limit as the webhook was last read; a new limit lets go of times reserved at the old. */
  follow(limit: number | null): void {
    const next = limit ?? undefined;
    if (next === this.limit) return;
    this.limit = next;
    this.times = [];
  }

  private get intervalMs(): number {
    return 1000 / this.limit!;
  }

  /** Send times in hand between now and `horizonMs` from now (Infinity: no limit). */
  allowedWithin(now: number, horizonMs: number): number {
    if (this.limit === undefined) return Infinity;
    this.dropStale(now);
    let count = 0;
    for (const at of this.times) if (at <= now + horizonMs) count++;
    return count;
  }

  /** The next send time in hand, taken; undefined when none is (reserve first). */
  take(now: number): number | undefined {
    if (this.limit === undefined) return now;
    this.dropStale(now);
    return this.times.shift();
  }

  /**
   * Reserves the next span's send times unless enough are in hand or a reservation is under way:
   * resolves once they are (at once when nothing was needed).
   */
  replenish(now: number, wanted: number): Promise<void> {
    if (this.limit === undefined) return Promise.resolve();
    if (this.reserving) return this.reserving;
    this.dropStale(now);
    if (this.times.length >= wanted) return Promise.resolve();
    const interval = this.intervalMs;
    const count = Math.max(1, Math.round((this.limit * RESERVE_SPAN_MS) / 1000));
    const asked = this.limit;
    const requestedAt = Date.now();
    this.reserving = this.reserve(count, interval)
      .then((firstInMs) => {
        if (asked !== this.limit) return; // the limit changed meanwhile: those times are not its
        const first = requestedAt + firstInMs;
        for (let i = 0; i < count; i++) this.times.push(first + i * interval);
      })
      .finally(() => {
        this.reserving = undefined;
      });
    return this.reserving;
  }

  /**
   * Whether a send due at `at` is too late to go at `now`: a time already taken, which a process
   * too busy to wake in time must let go rather than send beside the ones after it.
   */
  tooLate(at: number, now: number): boolean {
    return this.limit !== undefined && now - at > TOLERANCE_MS;
  }

  /** The first send time in hand, if any. */
  firstTime(now: number): number | undefined {
    this.dropStale(now);
    return this.times[0];
  }

  private dropStale(now: number): void {
    while (this.times.length > 0 && this.times[0]! < now - TOLERANCE_MS) this.times.shift();
  }
}
