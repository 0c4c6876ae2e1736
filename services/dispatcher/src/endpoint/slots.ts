/** Weight of the newest attempt in the running mean of attempt durations. */
const DURATION_WEIGHT = 0.2;

/**
 * While callers wait in the line, the lane takes one freed slot in this many: enough that it keeps
 * moving and its claims start well within their lease, few enough that a moment's backlog in the
 * lane does not take the line's slots and send the line after it (see `release`).
 */
export const LANE_TURN_EVERY = 8;

export interface SlotOptions {
  /** Attempts in flight to the webhook from this process, at most. */
  concurrency: number;
  /** How long an inline caller may wait in the line for a slot, at most (0: never). */
  inlineWaitMs: number;
  /** Told whenever a slot may have come free for the lane. */
  onRoom: () => void;
}

/**
 * One webhook's attempt slots in this process: how many attempts may be in flight, who waits for
 * one in memory, and what the endpoint's recent answers say about both.
 *
 * - **Slow start, and slowing down.** A new endpoint has one slot, twice as many with each answer up
 *   to the cap (as TCP's congestion window): a burst for an endpoint that never answers, or answers
 *   slowly, opens one connection instead of every slot's, each a TLS handshake. A receiver that asks
 *   us to slow down (429, 503) halves the window.
 * - **Trickling.** An endpoint whose last answer trickled (its body cut after the grace) gets one
 *   slot until an answer arrives whole: each such attempt costs a TLS handshake on both sides.
 * - **The line.** An inline caller (one holding a RabbitMQ message) at a busy endpoint may wait for a
 *   slot in memory, in order, briefly: a burst then goes out at the endpoint's pace with no write.
 *   Freed slots go to the line first, and one in LANE_TURN_EVERY to the lane.
 */
export class Slots {
  private readonly options: SlotOptions;
  /** Attempts running, and those handed a slot as it freed. */
  private active = 0;
  /** Inline callers waiting for a slot, oldest first; each is told whether it got one. */
  private readonly line: ((gotSlot: boolean) => void)[] = [];
  /** Slots freed while the line had callers since the lane's last turn. */
  private sinceLaneTurn = 0;
  private trickling = false;
  /** Slots open now, before the cap: doubles with each answer, halves when asked to slow down. */
  private window = 1;
  /** Running mean of attempt durations, ms; undefined until one finished. */
  meanDurationMs: number | undefined;
  /** When each attempt in flight was sent (performance.now()). */
  private readonly sentAt: number[] = [];

  constructor(options: SlotOptions) {
    this.options = options;
  }

  get idle(): boolean {
    return this.active === 0;
  }

  /** Slots that may be in flight at once now. */
  get size(): number {
    return this.trickling ? 1 : Math.min(this.options.concurrency, this.window);
  }

  get free(): number {
    return Math.max(0, this.size - this.active);
  }

  /**
   * Whether an inline caller may join the line: only as many as the recent pace serves in time, by
   * the slots that may free within the inline wait. An attempt out longer than that frees none in
   * time: an endpoint that has just begun to hang holds no shared message for the inline wait.
   */
  get lineHasRoom(): boolean {
    const waitMs = this.options.inlineWaitMs;
    if (waitMs <= 0) return false;
    const now = performance.now();
    const turning = this.size - this.sentAt.filter((at) => now - at >= waitMs).length;
    if (turning <= 0) return false;
    // Unmeasured yet (the first attempts are still out): the time bound alone.
    const served = this.meanDurationMs === undefined ? Infinity : waitMs / Math.max(1, this.meanDurationMs);
    return this.line.length < Math.floor(turning * served);
  }

  /** Takes a free slot; answers false when none is free. */
  take(): boolean {
    if (this.active >= this.size) return false;
    this.active++;
    return true;
  }

  /** Waits in the line for a slot, up to the inline wait; resolves true with the slot taken. */
  waitInLine(): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter = (gotSlot: boolean) => {
        clearTimeout(timer);
        resolve(gotSlot);
      };
      const timer = setTimeout(() => {
        this.line.splice(this.line.indexOf(waiter), 1);
        resolve(false);
      }, this.options.inlineWaitMs);
      this.line.push(waiter);
    });
  }

  /** The slot's attempt is sent now; answers when, for `release`. */
  sending(): number {
    const at = performance.now();
    this.sentAt.push(at);
    return at;
  }

  /** Sends everyone in the line away without a slot (the receiver asked us to wait). */
  clearLine(): void {
    for (const waiter of this.line.splice(0)) waiter(false);
  }

  /**
   * An attempt ended: its slot goes to the line first. The line's callers hold messages of queues
   * every agency shares, and whoever's messages wait behind them in the prefetch; the lane's
   * deliveries hold nothing and cost Postgres writes (held, claimed, released). Were the slots
   * shared equally, a moment's backlog in the lane would halve the line's pace, so more callers
   * would time out into the lane, and a busy endpoint would stay on the costlier way; the lane
   * takes one freed slot in LANE_TURN_EVERY, and every slot while the line is empty. `sentAt`: what
   * `sending` answered, when the slot's attempt was sent.
   */
  release(sentAt?: number): void {
    this.active--;
    const sent = sentAt === undefined ? -1 : this.sentAt.indexOf(sentAt);
    if (sent >= 0) this.sentAt.splice(sent, 1);
    if (this.line.length === 0) return this.options.onRoom();
    const laneTurn = ++this.sinceLaneTurn >= LANE_TURN_EVERY;
    if (laneTurn) {
      this.sinceLaneTurn = 0;
      this.options.onRoom();
    }
    if (this.active < this.size && this.line.length > 0) {
      this.active++;
      this.line.shift()!(true);
    } else if (!laneTurn) this.options.onRoom();
  }

  /** What an attempt's end says of the endpoint: its duration, whether it answered, and how. */
  observe(durationMs: number, answer: { answered: boolean; bodyCut: boolean; slowDown: boolean }): void {
    this.trickling = answer.bodyCut;
    if (answer.slowDown) this.window = Math.max(1, Math.floor(Math.min(this.window, this.size) / 2));
    else if (answer.answered) this.window = Math.min(this.options.concurrency, this.window * 2);
    this.meanDurationMs =
      this.meanDurationMs === undefined
        ? durationMs
        : this.meanDurationMs + DURATION_WEIGHT * (durationMs - this.meanDurationMs);
  }
}
