import type { ConsumeMessage } from 'amqplib';
import { OutageLog, type Logger } from '@trips/runtime';
import type { Publisher } from './confirm-publisher.ts';

/** What became of a message: done with (ack), or unusable and set aside for people (park). */
export type Disposition = 'ack' | 'park';

export type Handler = (message: ConsumeMessage, publisher: Publisher) => Promise<Disposition>;

/**
 * How a message is settled: a handler's Disposition, or returned to its queue, either after a
 * failure of its own ('retry', basic.reject: counts towards the delivery limit) or through no fault
 * of its own ('release', basic.nack: does not count since RabbitMQ 4.3).
 */
export type Outcome = Disposition | 'retry' | 'release';

/** The longest pause after a failed handling, before the message is tried again or returned. */
const MAX_PAUSE_MS = 30_000;

/**
 * The longest a message is held while a dependency is away, counted from its delivery; then it is
 * given back to its queue with basic.nack, delivered again at once (most likely to this consumer)
 * and held again.
 *
 * Why a bound, and why 20 minutes: RabbitMQ's consumer_timeout (30 minutes by default, on 3.10 as
 * on 4.x, checked once a minute) ends any delivery held longer. Up to 4.2 it closes the channel,
 * which returns every message on it, each counted towards the delivery limit, and fails the acks of
 * those being handled; from 4.3 it cancels the consumer, and a channel closed with messages on it
 * (as the Consumer does after a cancel) counts them. Giving a message back before then returns that
 * one alone, and since 4.3 a nack does not count: a message is then held through an outage of any
 * length (production runs 4.3+). Up to 4.2 every return counts, nack included, so a message is
 * parked after about 20 × 20 minutes (almost seven hours) of outage rather than the ten hours of
 * the broker's own timeouts; that is the price of never having a channel closed under the consumer.
 * Twenty minutes leaves ten before the default timeout for the attempt in progress when the bound
 * passes (the dispatcher's WEBHOOK_TIMEOUT bounds it) and the broker's once-a-minute check. The
 * broker's timeout is left alone rather than raised: in Kubernetes the broker is not ours to
 * configure, and the per-queue x-consumer-timeout argument and policy arrived in RabbitMQ 3.12,
 * after this machine's 3.10. Operators must not set consumer_timeout below 25 minutes
 * (docs/operations.md).
 */
const HOLD_LIMIT_MS = 20 * 60_000;

export interface HandlingOptions {
  handle: Handler;
  /**
   * Whether what the handler needs is reachable (Postgres, for the dispatcher), asked after a
   * handler threw; tells an outage from a failure of the message's own. Default: always.
   */
  dependenciesUp?: () => Promise<boolean>;
  /** The longest pause after a failed handling; default 30 s. */
  maxPauseMs?: number;
  /**
   * The longest a message is held while a dependency is away before it is given back to its
   * queue; default 20 minutes, below RabbitMQ's consumer_timeout (see HOLD_LIMIT_MS).
   */
  holdLimitMs?: number;
}

/**
 * Runs a message's handler until the message is done with, or is to go back to its queue.
 *
 * A handler that throws while a dependency is away keeps its message and tries again after a
 * growing pause: up to RabbitMQ 4.2 each return to the queue counts towards the queue's delivery
 * limit, so returning it after each failure would park every message in flight once an outage
 * outlasted twenty pauses (about eight minutes). Held messages fill the prefetch, so an outage takes
 * no more from the queue. A message held for `holdLimitMs` (20 minutes) is given back with
 * basic.nack before RabbitMQ's consumer timeout takes it (see HOLD_LIMIT_MS). When the
 * dependencies are up, the failure is the message's own: it goes back to its queue after the pause
 * with basic.reject, which counts towards the delivery limit on every RabbitMQ version (since 4.3 a
 * basic.nack no longer does), and the delivery limit parks it if that keeps happening. A message
 * given back through no fault of its own (held long enough, or the consumer stopping while it
 * holds one) goes with basic.nack, which does not count since 4.3.
 */
export class Handling {
  private readonly options: HandlingOptions;
  private readonly logger: Logger;
  /** Handling failures in a row, for the pause before a failed message is returned. */
  private failures = 0;
  /** Handlings failing while a dependency is away: one line per outage, not one per attempt. */
  private readonly away: OutageLog;
  private readonly pauses = new Set<() => void>();
  private stopping = false;

  constructor(options: HandlingOptions, logger: Logger) {
    this.options = options;
    this.logger = logger;
    this.away = new OutageLog(
      logger,
      'handling failed while a dependency is away; message kept and tried again',
    );
  }

  /** Handles the message until it is done with, or to be returned to its queue (see the class). */
  async outcome(message: ConsumeMessage, publisher: Publisher): Promise<Outcome> {
    const holdLimitMs = this.options.holdLimitMs ?? HOLD_LIMIT_MS;
    const giveBackAt = Date.now() + holdLimitMs;
    for (;;) {
      try {
        const disposition = await this.options.handle(message, publisher);
        this.failures = 0;
        this.away.succeeded();
        return disposition;
      } catch (error) {
        this.failures++;
        const pauseMs = Math.min(this.maxPauseMs, 250 * 2 ** Math.min(this.failures, 10));
        const messageId = message.properties.messageId as unknown;
        if (await this.dependenciesUp()) {
          this.logger.error(
            { err: error, messageId, pauseMs },
            'handling failed; message returned to its queue',
          );
          await this.pause(pauseMs);
          return 'retry';
        }
        this.away.failed(error, { messageId, pauseMs });
        await this.pause(Math.min(pauseMs, giveBackAt - Date.now()));
        if (this.stopping) return 'release';
        if (Date.now() >= giveBackAt) {
          this.logger.warn(
            { messageId, holdLimitMs },
            'message held its longest while a dependency is away; given back to its queue before the consumer timeout',
          );
          return 'release';
        }
      }
    }
  }

  /** Ends the pauses under way, and pauses no more: the messages held are given back. */
  stop(): void {
    this.stopping = true;
    for (const endPause of [...this.pauses]) endPause();
  }

  private dependenciesUp(): Promise<boolean> {
    return (this.options.dependenciesUp?.() ?? Promise.resolve(true)).catch(() => false);
  }

  private get maxPauseMs(): number {
    return this.options.maxPauseMs ?? MAX_PAUSE_MS;
  }

  /** Waits, unless the consumer stops meanwhile. */
  private pause(ms: number): Promise<void> {
    if (this.stopping || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.pauses.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.pauses.add(done);
    });
  }
}
