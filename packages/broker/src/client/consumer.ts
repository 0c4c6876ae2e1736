import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from '@trips/runtime';
import { ChannelAcks } from './acks.ts';
import { ConfirmPublisher, type Publisher } from './confirm-publisher.ts';
import { Handling, type HandlingOptions } from './handling.ts';

/** A message's JSON body, or undefined when it is not JSON (the handler then parks it). */
export function parseContent(message: ConsumeMessage): unknown {
  try {
    return JSON.parse(message.content.toString('utf8'));
  } catch {
    return undefined;
  }
}

export interface ConsumerOptions extends HandlingOptions {
  name: string;
  queue: string;
  /** Unacknowledged messages this consumer holds at most (per-consumer QoS, as RabbitMQ 4 requires). */
  prefetch: number;
  /** Declares the topology; run on every channel opened (reconnects included) before consuming. */
  setup: (ch: ConfirmChannel) => Promise<void>;
  /**
   * After this long with no delivery and nothing held, the consumer moves to a new channel, which
   * gives back whatever the queue still counts as delivered on the old one (see reopenIfIdle).
   * 0 or unset: never.
   */
  idleReopenMs?: number;
  /** How long a handler's publish may wait for its confirm; default 10 s (see retire). */
  publishTimeoutMs?: number;
}

/** The channel consumed on now. `retired`: being replaced; what still arrives on it is not handled. */
interface Current {
  ch: ConfirmChannel;
  consumerTag: string;
  acks: ChannelAcks;
  /** Publishes on `ch`: what a message leads to goes out on the channel it came on. */
  publisher: Publisher;
  retired: boolean;
}

/**
 * Consumes a queue with manual acks through a channel that reconnects by itself. Each message is
 * acknowledged, and anything it leads to is published, on the channel it arrived on: after a
 * reconnect that channel is gone, the ack fails harmlessly, and RabbitMQ redelivers the message,
 * which is the at-least-once we want. (Acking on the new channel would name a delivery tag it never
 * issued and make RabbitMQ close it.) What becomes of a message whose handler throws (kept through
 * an outage, returned when at fault, given back before RabbitMQ's consumer timeout) is Handling's;
 * how it is settled on the channel, ChannelAcks'.
 */
export class Consumer {
  private readonly options: ConsumerOptions;
  private readonly logger: Logger;
  private readonly channel: ConfirmPublisher;
  private readonly handling: Handling;
  private readonly inFlight = new Set<Promise<void>>();
  private current: Current | undefined;
  /** The last delivery, settlement or new channel: what idleness is counted from. */
  private activeAt = Date.now();
  private readonly watchdog: NodeJS.Timeout | undefined;
  private stopping = false;
  private markConsuming!: () => void;
  /** Resolves the first time the consumer consumes, on whichever channel. */
  private readonly consuming = new Promise<void>((resolve) => (this.markConsuming = resolve));

  constructor(connection: AmqpConnectionManager, options: ConsumerOptions, logger: Logger) {
    this.options = options;
    this.logger = logger.child({ consumer: options.name });
    this.handling = new Handling(options, this.logger);
    this.channel = new ConfirmPublisher(
      connection,
      {
        name: options.name,
        timeoutMs: options.publishTimeoutMs,
        setup: (ch) => this.consume(ch),
        beforeMove: (ch) => this.retire(ch),
      },
      this.logger,
    );
    if (options.idleReopenMs) {
      this.watchdog = setInterval(
        () => this.reopenIfIdle(options.idleReopenMs!),
        Math.max(options.idleReopenMs / 4, 100),
      );
      this.watchdog.unref();
    }
  }

  /** Sets up a new channel (every one opened, reconnects included) and consumes on it. */
  private async consume(ch: ConfirmChannel): Promise<void> {
    await this.options.setup(ch);
    if (this.stopping) return;
    await ch.prefetch(this.options.prefetch, false);
    const acks = new ChannelAcks(ch, (error, messages) =>
      this.logger.warn({ err: error, messages }, 'channel gone before ack; RabbitMQ redelivers'),
    );
    const current: Current = { ch, consumerTag: '', acks, publisher: this.channel.on(ch), retired: false };
    const { consumerTag } = await ch.consume(this.options.queue, (message) => {
      if (!message) return this.cancelled(ch);
      // Its channel is being replaced (reopenIfIdle, retire): the close returns the message to its queue.
      if (current.retired) return;
      this.activeAt = Date.now();
      acks.received(message);
      this.track(this.process(current, message));
    });
    current.consumerTag = consumerTag;
    this.current = current;
    this.activeAt = Date.now();
    this.markConsuming();
    ch.once('close', () => {
      if (this.current?.ch === ch) this.current = undefined;
    });
  }

  /**
   * Moves to a new channel when nothing has arrived for `idleMs` and this process holds no message.
   * Why: a quorum queue can count messages as checked out to this consumer that its channel never
   * got, or got back with a nack that never reached the queue's new leader (deliveries sent from
   * another node, and a leader change, go by sends RabbitMQ drops when the link is busy). The
   * channel's client notices a missing delivery only when a later one arrives; on a queue gone
   * quiet, or with the prefetch used up, none does, and the messages wait for as long as the
   * channel lives. Closing the channel returns them. Only when nothing is held, so that nothing
   * being handled here is given back (docs/operations.md, "Supported RabbitMQ versions").
   */
  private reopenIfIdle(idleMs: number): void {
    const current = this.current;
    if (this.stopping || !current || current.retired || this.inFlight.size > 0) return;
    const quietMs = Date.now() - this.activeAt;
    if (quietMs < idleMs) return;
    current.retired = true;
    this.logger.debug(
      { queue: this.options.queue, quietMs },
      'consumer idle, nothing held: consuming on a new channel',
    );
    current.acks.flush();
    this.activeAt = Date.now();
    this.channel.reopen();
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

  /**
   * A publish on `ch` went unconfirmed past its timeout, so the ConfirmPublisher leaves `ch`: it
   * takes no more messages, and the move waits until every message in hand is settled, since only
   * `ch` can acknowledge them. Answers whether to move still: not once stopping, nor when `ch` has
   * gone meanwhile.
   */
  private async retire(ch: ConfirmChannel): Promise<boolean> {
    const current = this.current;
    if (this.stopping || current?.ch !== ch || current.retired) return false;
    current.retired = true;
    await ch.cancel(current.consumerTag).catch(() => {});
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    current.acks.flush();
    this.activeAt = Date.now();
    return !this.stopping && this.current === current;
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

  private async process(current: Current, message: ConsumeMessage): Promise<void> {
    const outcome = await this.handling.outcome(message, current.publisher);
    this.activeAt = Date.now();
    current.acks.settle(message, outcome);
  }

  /**
   * Stops taking messages, lets those in flight finish (the handler bounds them: the dispatcher's
   * attempts by WEBHOOK_TIMEOUT), then closes the channel. Unfinished work past the caller's
   * deadline stays unacked and is redelivered to another consumer.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watchdog);
    if (this.current) {
      await this.current.ch.cancel(this.current.consumerTag).catch(() => {});
    }
    // After the cancel: a message given back before it could be delivered here again at once.
    this.handling.stop();
    await Promise.allSettled([...this.inFlight]);
    this.current?.acks.flush();
    await this.channel.close();
    this.current = undefined;
  }
}
