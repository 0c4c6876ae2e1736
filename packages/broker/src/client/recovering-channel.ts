import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel } from 'amqplib';
import type { Logger } from '@trips/runtime';

/**
 * How long after RabbitMQ closed a channel a new one is opened. What closed it (a queue declared
 * with other arguments, say) may last: the pause bounds the retries and their log lines.
 */
const REOPEN_DELAY_MS = 5_000;

/**
 * A channel wrapper that comes back after RabbitMQ closes its channel. amqp-connection-manager opens
 * a channel and runs its setup again only on a new connection: a channel the broker closes while the
 * connection lives (a declaration refused with 406 PRECONDITION_FAILED, a passive check of a missing
 * queue, an ack of an unknown delivery tag, or a consumer closing it after a cancel) stays closed,
 * and what ran on it silently stops. So, a few seconds later, a new wrapper replaces it.
 *
 * Both kinds of 'error' are listened to: unheard, a wrapper's (its setup failed) is an uncaught
 * exception that kills the process, and a raw channel's is thrown inside amqplib, which then closes
 * the whole connection and every other channel on it.
 */
export class RecoveringChannel {
  private readonly connection: AmqpConnectionManager;
  private readonly options: { name: string; setup: (ch: ConfirmChannel) => Promise<void> };
  private readonly logger: Logger;
  private readonly reopenDelayMs: number;
  private current: ChannelWrapper;
  /** The raw channel whose setup succeeded, until it closes or is replaced. */
  private live: ConfirmChannel | undefined;
  private settingUp = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    connection: AmqpConnectionManager,
    options: { name: string; setup: (ch: ConfirmChannel) => Promise<void> },
    logger: Logger,
    reopenDelayMs = REOPEN_DELAY_MS,
  ) {
    this.connection = connection;
    this.options = options;
    this.logger = logger.child({ channel: options.name });
    this.reopenDelayMs = reopenDelayMs;
    this.current = this.open();
  }

  get wrapper(): ChannelWrapper {
    return this.current;
  }

  /** The channel in use: set up, and neither closed nor being replaced. */
  get inUse(): ConfirmChannel | undefined {
    return this.live;
  }

  private open(): ChannelWrapper {
    const wrapper = this.connection.createChannel({
      name: this.options.name,
      confirm: true,
      setup: async (ch: ConfirmChannel) => {
        if (wrapper !== this.current) {
          // Replaced while it was opening this channel (a reconnect raced the timer): not used.
          await ch.close().catch(() => {});
          return;
        }
        ch.on('error', (err: Error) => this.logger.warn({ err: err.message }, 'RabbitMQ closed the channel'));
        ch.once('close', () => {
          if (this.live === ch) this.live = undefined;
          if (wrapper === this.current) this.reopenLater();
        });
        this.settingUp = true;
        try {
          await this.options.setup(ch);
          this.live = ch;
        } finally {
          this.settingUp = false;
        }
      },
    });
    wrapper.on('error', (err: Error) => {
      this.logger.error(
        { err: err.message, retryInMs: this.reopenDelayMs },
        'setting up the channel failed; trying again on a new channel',
      );
      if (wrapper === this.current) this.reopenLater();
    });
    return wrapper;
  }

  private reopenLater(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A lost connection closes its channels too; the wrapper then runs its setup again by itself
      // once the manager has reconnected (or is doing so now).
      if (this.closed || this.live || this.settingUp || !this.connection.isConnected()) return;
      const old = this.current;
      this.current = this.open();
      void old.close().catch(() => {});
    }, this.reopenDelayMs);
  }

  /**
   * Replaces the channel now with a new one (whose setup runs again) and closes the old: for a
   * consumer that wants RabbitMQ to take back what it counts as delivered on the old channel, and
   * for a publisher leaving a channel that stopped confirming (ConfirmPublisher).
   */
  reopen(): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.live = undefined;
    const old = this.current;
    this.current = this.open();
    void old.close().catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.current.close();
  }
}
