import type { AmqpConnectionManager, ChannelWrapper } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { Logger } from '@trips/runtime';

/** What became of a message: done with (ack), or unusable and set aside for people (park). */
export type Disposition = 'ack' | 'park';

export interface Publisher {
  /** Publishes on the message's own channel and resolves once RabbitMQ confirmed it. */
  publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish): Promise<void>;
}

export type Handler = (message: ConsumeMessage, publisher: Publisher) => Promise<Disposition>;

export interface ConsumerOptions {
  name: string;
  queue: string;
  /** Unacknowledged messages this consumer holds at most (per-consumer QoS, as RabbitMQ 4 requires). */
  prefetch: number;
  /** Declares the topology; run on every (re)connect before consuming. */
  setup: (ch: ConfirmChannel) => Promise<void>;
  handle: Handler;
}

/**
 * Consumes a queue with manual acks through a channel that reconnects by itself. Each message is
 * acknowledged, and anything it leads to is published, on the channel it arrived on: after a
 * reconnect that channel is gone, the ack fails harmlessly, and RabbitMQ redelivers the message,
 * which is the at-least-once we want. (Acking on the new channel would name a delivery tag it never
 * issued and make RabbitMQ close it.) A handler that throws leaves the message unacked, so it is
 * redelivered after a reconnect and parked by the queue's delivery limit if it keeps failing.
 */
export class Consumer {
  private readonly options: ConsumerOptions;
  private readonly logger: Logger;
  private readonly channel: ChannelWrapper;
  private readonly inFlight = new Set<Promise<void>>();
  private current: { ch: ConfirmChannel; consumerTag: string } | undefined;
  private stopping = false;

  constructor(connection: AmqpConnectionManager, options: ConsumerOptions, logger: Logger) {
    this.options = options;
    this.logger = logger.child({ consumer: options.name });
    this.channel = connection.createChannel({
      name: options.name,
      confirm: true,
      setup: async (ch: ConfirmChannel) => {
        await options.setup(ch);
        if (this.stopping) return;
        await ch.prefetch(options.prefetch, false);
        const { consumerTag } = await ch.consume(options.queue, (message) => {
          if (message) this.track(this.process(ch, message));
        });
        this.current = { ch, consumerTag };
        ch.once('close', () => {
          if (this.current?.ch === ch) this.current = undefined;
        });
      },
    });
  }

  /** Resolves once the channel is set up and consuming. */
  async ready(): Promise<void> {
    await this.channel.waitForConnect();
  }

  get connected(): boolean {
    return this.current !== undefined;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async process(ch: ConfirmChannel, message: ConsumeMessage): Promise<void> {
    const publisher: Publisher = {
      publish: (exchange, routingKey, content, options) =>
        new Promise((resolve, reject) => {
          ch.publish(exchange, routingKey, content, { persistent: true, ...options }, (err) =>
            err ? reject(err as Error) : resolve(),
          );
        }),
    };
    let disposition: Disposition;
    try {
      disposition = await this.options.handle(message, publisher);
    } catch (error) {
      // Left unacked on purpose: redelivered after the channel closes or the process restarts.
      this.logger.error(
        { err: error, messageId: message.properties.messageId },
        'handling failed; message kept',
      );
      return;
    }
    try {
      if (disposition === 'ack') ch.ack(message);
      else ch.nack(message, false, false); // dead-lettered to the parked queue
    } catch (error) {
      this.logger.warn(
        { err: error, messageId: message.properties.messageId },
        'channel gone before ack; RabbitMQ redelivers',
      );
    }
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
    await Promise.allSettled([...this.inFlight]);
    await this.channel.close();
    this.current = undefined;
  }
}
