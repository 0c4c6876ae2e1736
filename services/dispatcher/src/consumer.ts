import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { Logger } from '@trips/runtime';
import { ChannelAcks } from './acks.ts';

/** What became of a message: done with (ack), or unusable and set aside for people (park). */
export type Disposition = 'ack' | 'park';

export interface Publisher {
  /** Publishes on the message's own channel and resolves once RabbitMQ confirmed it. */
  publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish): Promise<void>;
}

/** A message's JSON body, or undefined when it is not JSON (the handler then parks it). */
export function parseContent(message: ConsumeMessage): unknown {
  try {
    return JSON.parse(message.content.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** The longest pause after a failed handling, before the message is tried again or returned. */
const MAX_PAUSE_MS = 30_000;

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
  /** The raw channel whose setup succeeded, until it closes. */
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

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.current.close();
  }
}

export type Handler = (message: ConsumeMessage, publisher: Publisher) => Promise<Disposition>;

export interface ConsumerOptions {
  name: string;
  queue: string;
  /** Unacknowledged messages this consumer holds at most (per-consumer QoS, as RabbitMQ 4 requires). */
  prefetch: number;
  /** Declares the topology; run on every channel opened (reconnects included) before consuming. */
  setup: (ch: ConfirmChannel) => Promise<void>;
  handle: Handler;
  /**
   * Whether what the handler needs is reachable (Postgres, for the dispatcher), asked after a
   * handler threw; tells an outage from a failure of the message's own. Default: always.
   */
  dependenciesUp?: () => Promise<boolean>;
  /** The longest pause after a failed handling; default 30 s. */
  maxPauseMs?: number;
}

/**
 * Consumes a queue with manual acks through a channel that reconnects by itself. Each message is
 * acknowledged, and anything it leads to is published, on the channel it arrived on: after a
 * reconnect that channel is gone, the ack fails harmlessly, and RabbitMQ redelivers the message,
 * which is the at-least-once we want. (Acking on the new channel would name a delivery tag it never
 * issued and make RabbitMQ close it.)
 *
 * A handler that throws while a dependency is away keeps its message and tries again after a
 * growing pause: each return to the queue counts towards the queue's delivery limit, so returning
 * it would park every message in flight once an outage outlasted twenty pauses (about eight
 * minutes). Held messages fill the prefetch, so an outage takes no more from the queue. When the
 * dependencies are up, the failure is the message's own: it goes back to its queue after the pause,
 * and the delivery limit parks it if that keeps happening.
 */
export class Consumer {
  private readonly options: ConsumerOptions;
  private readonly logger: Logger;
  private readonly channel: RecoveringChannel;
  private readonly inFlight = new Set<Promise<void>>();
  private current: { ch: ConfirmChannel; consumerTag: string; acks: ChannelAcks } | undefined;
  private stopping = false;
  /** Handling failures in a row, for the pause before a failed message is returned. */
  private failures = 0;
  private readonly pauses = new Set<() => void>();
  private markConsuming!: () => void;
  /** Resolves the first time the consumer consumes, on whichever channel. */
  private readonly consuming = new Promise<void>((resolve) => (this.markConsuming = resolve));

  constructor(connection: AmqpConnectionManager, options: ConsumerOptions, logger: Logger) {
    this.options = options;
    this.logger = logger.child({ consumer: options.name });
    this.channel = new RecoveringChannel(
      connection,
      {
        name: options.name,
        setup: async (ch: ConfirmChannel) => {
          await options.setup(ch);
          if (this.stopping) return;
          await ch.prefetch(options.prefetch, false);
          const acks = new ChannelAcks(ch, (error, messages) =>
            this.logger.warn({ err: error, messages }, 'channel gone before ack; RabbitMQ redelivers'),
          );
          const { consumerTag } = await ch.consume(options.queue, (message) => {
            if (!message) return this.cancelled(ch);
            acks.received(message);
            this.track(this.process(ch, acks, message));
          });
          this.current = { ch, consumerTag, acks };
          this.markConsuming();
          ch.once('close', () => {
            if (this.current?.ch === ch) this.current = undefined;
          });
        },
      },
      this.logger,
    );
  }

  /**
   * RabbitMQ cancelled the consumer (basic.cancel, e.g. its queue was deleted): nothing more arrives
   * on this channel, yet the channel stays open. Closing it makes the RecoveringChannel open a new
   * one, whose setup declares the queue again and consumes; until then readiness says not consuming.
   */
  private cancelled(ch: ConfirmChannel): void {
    if (this.stopping) return;
    this.logger.warn(
      { queue: this.options.queue },
      'RabbitMQ cancelled the consumer (its queue deleted?); consuming again on a new channel shortly',
    );
    if (this.current?.ch === ch) this.current = undefined;
    void ch.close().catch(() => {});
  }

  /** Resolves once the channel is set up and consuming (after any failed setups, see RecoveringChannel). */
  ready(): Promise<void> {
    return this.consuming;
  }

  get connected(): boolean {
    return this.current !== undefined;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async process(ch: ConfirmChannel, acks: ChannelAcks, message: ConsumeMessage): Promise<void> {
    const publisher: Publisher = {
      publish: (exchange, routingKey, content, options) =>
        new Promise((resolve, reject) => {
          ch.publish(exchange, routingKey, content, { persistent: true, ...options }, (err) =>
            err ? reject(err as Error) : resolve(),
          );
        }),
    };
    const disposition = await this.settle(message, publisher);
    if (disposition === 'ack') acks.ack(message);
    else acks.nack(message, disposition === 'requeue'); // 'park': dead-lettered to the parked queue
  }

  /** Handles the message until it is done with, or to be returned to its queue (see the class). */
  private async settle(message: ConsumeMessage, publisher: Publisher): Promise<Disposition | 'requeue'> {
    for (;;) {
      try {
        const disposition = await this.options.handle(message, publisher);
        this.failures = 0;
        return disposition;
      } catch (error) {
        this.failures++;
        const pauseMs = Math.min(this.maxPauseMs, 250 * 2 ** Math.min(this.failures, 10));
        const held = !(await this.dependenciesUp());
        this.logger.error(
          { err: error, messageId: message.properties.messageId, pauseMs },
          held
            ? 'handling failed while a dependency is away; message kept and tried again'
            : 'handling failed; message returned to its queue',
        );
        await this.pause(pauseMs);
        if (!held || this.stopping) return 'requeue';
      }
    }
  }

  private dependenciesUp(): Promise<boolean> {
    return (this.options.dependenciesUp?.() ?? Promise.resolve(true)).catch(() => false);
  }

  private get maxPauseMs(): number {
    return this.options.maxPauseMs ?? MAX_PAUSE_MS;
  }

  /** Waits, unless the consumer stops meanwhile. */
  private pause(ms: number): Promise<void> {
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

  /**
   * Stops taking messages, lets those in flight finish (their attempts are bounded by
   * WEBHOOK_TIMEOUT), then closes the channel. Unfinished work past the caller's deadline stays
   * unacked and is redelivered to another dispatcher.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.current) {
      await this.current.ch.cancel(this.current.consumerTag).catch(() => {});
    }
    for (const endPause of [...this.pauses]) endPause();
    await Promise.allSettled([...this.inFlight]);
    this.current?.acks.flush();
    await this.channel.close();
    this.current = undefined;
  }
}
