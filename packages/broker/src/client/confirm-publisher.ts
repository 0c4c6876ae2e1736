import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ConfirmChannel, Options } from 'amqplib';
import { withTimeout, type Logger } from '@trips/runtime';
import { PUBLISH_TIMEOUT_MS, refusalOr, UnconfirmedPublish } from '../confirms.ts';
import { RecoveringChannel } from './recovering-channel.ts';

/** What a handler, a loop or a batch publishes through. */
export interface Publisher {
  /**
   * Resolves once RabbitMQ confirmed the message (persistent unless `options` say otherwise).
   * Rejects with PublishRefused when RabbitMQ refused it, with UnconfirmedPublish after the publish
   * timeout, or with the channel's error when the channel went first.
   */
  publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish): Promise<void>;
}

export interface ConfirmPublisherOptions {
  /** The channel's name, in its log lines. */
  name: string;
  /** Run on every channel opened (a reconnect, a move), before anything is published on it. */
  setup?: (ch: ConfirmChannel) => Promise<void>;
  /** How long a publish waits for its confirm; default PUBLISH_TIMEOUT_MS. */
  timeoutMs?: number;
  /**
   * Run when a publish on `ch` went unconfirmed, before the publisher leaves `ch` for a new
   * channel; answers whether to leave it still. A consumer settles there the messages it holds on
   * `ch`, which only `ch` can acknowledge. Default: leave at once.
   */
  beforeMove?: (ch: ConfirmChannel) => Promise<boolean>;
}

/**
 * Publishes with publisher confirms, each publish bounded by a timeout, on a channel that comes back
 * after RabbitMQ closes it (RecoveringChannel).
 *
 * A publish left unconfirmed past its timeout while the connection lives moves the publisher to a
 * new channel. Why: a channel that missed a quorum queue's leader change goes on sending that
 * queue's enqueues to the old leader, so every later publish there would wait in vain too, and a
 * new channel starts afresh (docs/operations.md, "Supported RabbitMQ versions"). The channel is
 * left once, however many of its publishes time out. What went unconfirmed is the caller's to
 * publish again.
 */
export class ConfirmPublisher implements Publisher {
  private readonly connection: AmqpConnectionManager;
  private readonly options: ConfirmPublisherOptions;
  private readonly logger: Logger;
  private readonly channel: RecoveringChannel;
  private readonly timeoutMs: number;
  /** Channels a publish went unconfirmed on: being left, or left. */
  private readonly leaving = new WeakSet<ConfirmChannel>();
  private closed = false;

  constructor(connection: AmqpConnectionManager, options: ConfirmPublisherOptions, logger: Logger) {
    this.connection = connection;
    this.options = options;
    this.logger = logger.child({ channel: options.name });
    this.timeoutMs = options.timeoutMs ?? PUBLISH_TIMEOUT_MS;
    const setup = options.setup ?? (async () => {});
    this.channel = new RecoveringChannel(connection, { name: options.name, setup }, logger);
  }

  /**
   * On the channel in use. While there is none (the connection is being made again) the message
   * waits for the next, and one whose channel closed before its confirm goes again on the next
   * (amqp-connection-manager's channel wrapper does both), all within the timeout.
   */
  async publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
  ): Promise<void> {
    const properties = { persistent: true, ...options, timeout: this.timeoutMs };
    try {
      await this.channel.wrapper.publish(exchange, routingKey, content, properties);
    } catch (error) {
      // The wrapper's own timeout, which also takes the message out of its queue of those to send.
      if ((error as Error).message === 'timeout') throw this.unconfirmed(this.channel.inUse);
      throw refusalOr(error);
    }
  }

  /**
   * A publisher on `ch` alone, for what a consumed message leads to: it goes out on the channel the
   * message came on, or fails with that channel (consumer.ts says why).
   */
  on(ch: ConfirmChannel): Publisher {
    return {
      publish: (exchange, routingKey, content, options) =>
        withTimeout(
          new Promise<void>((resolve, reject) => {
            ch.publish(exchange, routingKey, content, { persistent: true, ...options }, (err) =>
              err ? reject(refusalOr(err) as Error) : resolve(),
            );
          }),
          this.timeoutMs,
          () => this.unconfirmed(ch),
        ),
    };
  }

  /** Leaves `ch` if it is still the channel in use and the connection lives; answers the publish's error. */
  private unconfirmed(ch: ConfirmChannel | undefined): UnconfirmedPublish {
    const error = new UnconfirmedPublish(this.timeoutMs);
    if (this.closed || !ch || ch !== this.channel.inUse || this.leaving.has(ch)) return error;
    if (!this.connection.isConnected()) return error;
    this.leaving.add(ch);
    this.logger.warn(
      { timeoutMs: this.timeoutMs },
      'a publish went unconfirmed past its timeout on a live connection: moving to a new channel',
    );
    void (this.options.beforeMove?.(ch) ?? Promise.resolve(true)).then((move) => {
      if (move && !this.closed && ch === this.channel.inUse) this.channel.reopen();
    });
    return error;
  }

  /** Moves to a new channel now, whose setup runs again, and closes the one in use. */
  reopen(): void {
    this.channel.reopen();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.channel.close();
  }
}
