import { atMostEvery, type Logger } from '@trips/runtime';

/** How long the publisher waits before trying again events that no queue took. */
export const UNROUTABLE_RETRY_MS = 1_000;
/**
 * How long the publisher waits after RabbitMQ refused a whole batch because the dispatcher's events
 * queue was full: shorter than the poll interval, as the queue holds only a few dozen milliseconds
 * of fan-out and must not run dry while the publisher sleeps (service.ts wakes the loop after it).
 */
export const REFUSED_RETRY_MS = 5;
/**
 * The smallest batch after refusals (see PublishPace), unless the batch size is smaller: a batch the
 * queue refused whole (it took 0) must still probe for room.
 */
export const MIN_WINDOW = 16;
/** Events published and not yet confirmed, at most (Publisher.publish says why). */
export const PUBLISH_IN_FLIGHT = 20;
/**
 * Events in flight while the queue takes whole batches (the window at the batch size): with
 * PUBLISH_IN_FLIGHT, publishing fell behind recording when nothing was full. The first refusal
 * after such a calm puts at most this many events ahead of the next agency's, once; refusals then
 * shrink the window, and PUBLISH_IN_FLIGHT holds until whole batches go again.
 */
export const CALM_PUBLISH_IN_FLIGHT = 80;

/** What RabbitMQ made of a batch: how many events it confirmed, of those how many a queue took, and how many it refused. */
export interface BatchAnswer {
  confirmed: number;
  routed: number;
  refused: number;
}

/**
 * How large the publisher's next batch is, and when it may go, from RabbitMQ's answers to the last
 * ones. While the dispatcher's events queue refuses some events, the next batch is no larger than
 * what it took last time, or MIN_WINDOW if that is more (never more than the batch size), and the
 * window doubles back while every batch is taken whole: a full queue costs a few refusals per
 * round, not a whole batch's. A batch the queue took none of holds the next for REFUSED_RETRY_MS;
 * one with events no queue took (none bound yet), for UNROUTABLE_RETRY_MS.
 */
export class PublishPace {
  private readonly batchSize: number;
  private readonly exchange: string;
  private readonly logger: Logger;
  /** Events taken per batch: the batch size, or less while the queue refuses some. */
  private size: number;
  /** No batch before this (ms). */
  private holdUntil = 0;
  private readonly unroutableWarningDue = atMostEvery(60_000);
  private readonly refusedNoticeDue = atMostEvery(60_000);

  constructor(options: { batchSize: number; exchange: string }, logger: Logger) {
    this.batchSize = options.batchSize;
    this.exchange = options.exchange;
    this.logger = logger;
    this.size = options.batchSize;
  }

  /** How many events the next batch takes. */
  get window(): number {
    return this.size;
  }

  /** Whether the queue has taken whole batches lately: the window is the batch size. */
  get calm(): boolean {
    return this.size >= this.batchSize;
  }

  /** How many events may wait for their confirms at once. */
  get inFlight(): number {
    return this.calm ? CALM_PUBLISH_IN_FLIGHT : PUBLISH_IN_FLIGHT;
  }

  /** Whether the next batch must wait still. */
  get held(): boolean {
    return Date.now() < this.holdUntil;
  }

  /** Sizes and holds the next batch after RabbitMQ's answer; answers whether the queue refused it whole. */
  answered({ confirmed, routed, refused }: BatchAnswer): boolean {
    const full = refused > 0 && this.refused(confirmed, refused);
    if (refused === 0) this.size = Math.min(this.batchSize, this.size * 2);
    if (routed < confirmed) this.holdOff(confirmed - routed);
    return full;
  }

  /**
   * The queue was full: the next batch is no larger than what it took, about what the dispatchers
   * took from it meanwhile. It follows at once when the queue took some (an agency's new event then
   * waits one short round); a batch it took none of waits REFUSED_RETRY_MS.
   */
  private refused(taken: number, refused: number): boolean {
    // Never above the batch size, though: the floor must not raise a RECORDER_BATCH_SIZE below it.
    this.size = Math.min(this.batchSize, Math.max(MIN_WINDOW, taken));
    if (taken === 0) this.holdUntil = Math.max(this.holdUntil, Date.now() + REFUSED_RETRY_MS);
    if (this.refusedNoticeDue())
      this.logger.info(
        { refused, taken, exchange: this.exchange },
        "events held back: the dispatcher's events queue is full (they go out as it drains)",
      );
    return taken === 0;
  }

  private holdOff(unroutable: number): void {
    this.holdUntil = Date.now() + UNROUTABLE_RETRY_MS;
    if (!this.unroutableWarningDue()) return;
    this.logger.warn(
      { unroutable, exchange: this.exchange, retryInMs: UNROUTABLE_RETRY_MS },
      'events left unpublished: no queue is bound to the exchange yet (the dispatcher declares it)',
    );
  }
}
