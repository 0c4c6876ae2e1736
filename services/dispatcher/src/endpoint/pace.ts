export interface PaceOptions {
  /**
   * A back-pressure answer without a usable Retry-After pauses the webhook this long, twice as long
   * with each such answer in a row, up to `maxBackoffMs`.
   */
  backoffMs: number;
  maxBackoffMs: number;
  /** The longest pause: a Retry-After asking for more is cut to this (the webhook's failure window). */
  maxPauseMs: number;
}

/**
 * After a complaint the rate starts at this share of the receiver's capacity as last read... (the
 * capacity: what it took in the last second, and never more than the rate it just complained of)
 */
const DECREASE = 0.9;
/**
 * ...and rises towards this share of it (a second's time constant), a little under, to stay clear:
 * a capacity read too high (a fixed-window limiter lets up to twice its rate through in a second
 * that straddles two windows) is then lowered by this much with each complaint until none comes.
 */
const PLATEAU = 0.97;
/**
 * What the receiver took in the second before a complaint is its capacity when we had been sending
 * to it for about that second (a limiter's rate per second). A complaint sooner after we started
 * or resumed says less: a burst into a fresh limiter takes what it holds, which may be less than
 * its rate. So the rate stays under a capacity it trusts for a long while, then probes above it by
 * a hundredth of it a second, in case the receiver grew; under one it does not trust, for a moment,
 * then it doubles every second until the next complaint, which tells.
 */
const TRUSTED_AFTER_MS = 900;
const PLATEAU_MS = { trusted: 20_000, untrusted: 2_000 };
const PROBE_PER_S = 0.01;
/**
 * A probe that found the same capacity again (within a tenth) doubles the next plateau, up to
 * this: a receiver that stays put is probed ever more rarely, since each probe costs a pause.
 */
const LONGEST_PLATEAU_MS = 300_000;
/**
 * A rate grown to this many times a trusted capacity without a complaint is dropped: the receiver
 * keeps up. Doubling from an untrusted one, it is dropped after a few more doublings.
 */
const FORGET_AT = { trusted: 2, untrusted: 64 };
/** Fewer 2xx than this in the second before a complaint tell no capacity: the rate doubles from it. */
const MIN_EVIDENCE = 5;
/** The slowest pace: one delivery a second. */
const MIN_RATE = 1;
/** 2xx answers are counted in slices of this, over the last second. */
const SLICE_MS = 100;

/**
 * The receiver's own pace for one webhook, as this process learns it from its answers (D10):
 * - **A pause.** A 429 or 503 answer asks us to wait: nothing is attempted before its Retry-After
 *   (seconds or an HTTP date), or, without one, a short backoff that doubles while such answers
 *   come in a row. The pause is shared with every dispatcher through Postgres (webhook-pace.ts);
 *   here it is the part this process knows first.
 * - **A rate.** The same answer sets a rate from what the receiver took in the last second (its
 *   2xx answers, pauses included: a limiter's capacity per second), a tenth under it
 *   (multiplicative decrease). The rate then rises within a few seconds to just under that
 *   capacity and stays there, where a receiver behind a limiter refuses nothing; only after a
 *   while does it probe above, slowly, since every refusal costs a whole pause (a gentle increase
 *   that finds a receiver that grew). A capacity read too soon after we began sending is trusted
 *   for a moment only, and one too small to tell not at all: the rate then doubles every second.
 *   Answers to attempts sent before the rate was lowered lower it no further: they say nothing new.
 *   A rate grown well past its capacity without a complaint is dropped: the receiver keeps up.
 * A webhook without a rate is sent to as fast as its slots allow (slots.ts).
 */
export class Pace {
  private readonly options: PaceOptions;
  /** Nothing is attempted before then (ms, this process's clock). */
  pausedUntil = 0;
  /** What the receiver took when the rate was last lowered; undefined: no rate. */
  private rateAtLowering: number | undefined;
  /** What the receiver took in the second before the last complaint; undefined: too few to tell. */
  private capacity: number | undefined;
  /** Whether that complaint came after a second of sending, so the capacity is trusted. */
  private trusted = false;
  /** How long the rate stays under a trusted capacity before it probes above. */
  private plateauMs = PLATEAU_MS.trusted;
  /** When the rate was last lowered: answers to attempts sent before then lower it no further. */
  private loweredAt = -Infinity;
  /** When the next delivery may go at the rate: a virtual schedule, never behind now when used. */
  private nextAt = 0;
  /** Since when 2xx answers have come without a pause or a gap of over a second (Infinity: not now). */
  private sendingSince = Infinity;
  private lastDeliveredAt = -Infinity;
  /** Back-pressure answers without a Retry-After in a row (the backoff's exponent). */
  private unexplained = 0;
  /** 2xx answers per slice of the last second, with the slice each count is for. */
  private readonly accepted = new Array<{ slice: number; count: number } | undefined>(1000 / SLICE_MS);

  constructor(options: PaceOptions) {
    this.options = options;
  }

  /** Deliveries a second now; undefined: no rate (none set, or forgotten). */
  rate(now: number): number | undefined {
    if (this.rateAtLowering === undefined) return undefined;
    const rate = this.rateAt(now);
    const forgetAt = this.trusted && this.capacity !== undefined ? FORGET_AT.trusted : FORGET_AT.untrusted;
    return rate > forgetAt * (this.capacity ?? this.rateAtLowering) ? undefined : rate;
  }

  private rateAt(now: number): number {
    // Counted from when the pause ends: a rate grows with answers, and there are none before.
    const sinceMs = Math.max(0, now - Math.max(this.loweredAt, this.pausedUntil));
    if (this.capacity === undefined) return this.rateAtLowering! * 2 ** (sinceMs / 1000);
    const settled = this.capacity * (PLATEAU - (PLATEAU - DECREASE) * Math.exp(-sinceMs / 1000));
    const probingS = (sinceMs - (this.trusted ? this.plateauMs : PLATEAU_MS.untrusted)) / 1000;
    if (probingS <= 0) return Math.max(MIN_RATE, settled);
    return this.trusted
      ? settled + this.capacity * PROBE_PER_S * probingS
      : Math.max(MIN_RATE, settled) * 2 ** probingS;
  }

  /** The earliest a delivery may go at the rate (now, with no rate or behind it). */
  sendAt(now: number): number {
    return this.rate(now) === undefined ? now : Math.max(now, this.nextAt);
  }

  /** Takes the next send time at the rate: answers it (now, with no rate). */
  take(now: number): number {
    const at = this.sendAt(now);
    const rate = this.rate(at);
    if (rate !== undefined) this.nextAt = at + 1000 / rate;
    return at;
  }

  /** How many deliveries the rate lets start between now and `horizonMs` from now. */
  allowedWithin(now: number, horizonMs: number): number {
    const rate = this.rate(now);
    if (rate === undefined) return Infinity;
    const from = this.sendAt(now);
    if (from > now + horizonMs) return 0;
    return 1 + Math.floor(((now + horizonMs - from) * rate) / 1000);
  }

  /** Whether a rate applies now. */
  paced(now: number): boolean {
    return this.rate(now) !== undefined;
  }

  /**
   * The receiver answered 429 or 503 to an attempt sent at `sentAt`: answers when the pause it asks
   * for ends, and whether that lengthened the pause this process knew.
   */
  askedToWait(
    now: number,
    sentAt: number,
    retryAfterMs: number | undefined,
  ): { until: number; longer: boolean } {
    // Lowered first: the rate complained of, and how long it had probed, are read from before this
    // answer's pause.
    if (sentAt >= this.loweredAt) this.lower(now, this.rate(now));
    if (retryAfterMs === undefined) this.unexplained++;
    else this.unexplained = 0;
    const waitMs =
      retryAfterMs ??
      Math.min(this.options.maxBackoffMs, this.options.backoffMs * 2 ** (this.unexplained - 1));
    const until = now + Math.min(waitMs, this.options.maxPauseMs);
    const longer = until > this.pausedUntil;
    if (longer) this.pausedUntil = until;
    this.nextAt = Math.max(this.nextAt, this.pausedUntil);
    return { until: this.pausedUntil, longer };
  }

  /** A 2xx answer: counted for the capacity the next complaint will read. */
  delivered(now: number): void {
    this.unexplained = 0;
    if (now - this.lastDeliveredAt > 1_000) this.sendingSince = Infinity;
    if (this.sendingSince === Infinity && now >= this.pausedUntil) this.sendingSince = now;
    this.lastDeliveredAt = now;
    const slice = Math.floor(now / SLICE_MS);
    const at = slice % this.accepted.length;
    const kept = this.accepted[at];
    if (kept?.slice === slice) kept.count++;
    else this.accepted[at] = { slice, count: 1 };
  }

  /** Whether the pace may be forgotten (nothing of it left to keep). */
  settled(now: number): boolean {
    return this.rate(now) === undefined && this.pausedUntil < now;
  }

  private lower(now: number, rate: number | undefined): void {
    const took = Math.min(this.acceptedLastSecond(now), rate ?? Infinity);
    const previous = this.trusted ? this.capacity : undefined;
    const probed = now - Math.max(this.loweredAt, this.pausedUntil) > this.plateauMs;
    this.capacity = took >= MIN_EVIDENCE ? took : undefined;
    this.trusted = now - this.sendingSince >= TRUSTED_AFTER_MS;
    const same =
      previous !== undefined &&
      this.capacity !== undefined &&
      Math.abs(this.capacity - previous) <= previous / 10;
    this.plateauMs =
      this.trusted && probed && same ? Math.min(2 * this.plateauMs, LONGEST_PLATEAU_MS) : PLATEAU_MS.trusted;
    this.rateAtLowering = Math.max(MIN_RATE, took);
    this.loweredAt = now;
    this.sendingSince = Infinity;
  }

  private acceptedLastSecond(now: number): number {
    const current = Math.floor(now / SLICE_MS);
    let count = 0;
    for (const kept of this.accepted)
      if (kept && current - kept.slice < this.accepted.length) count += kept.count;
    return count;
  }
}
