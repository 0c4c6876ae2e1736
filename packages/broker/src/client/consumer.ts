import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { OutageLog, withTimeout, type Logger } from '@trips/runtime';
import { RecoveringChannel } from './recovering-channel.ts';
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
 * The longest a message is held while a dependency is away, counted from its delivery; then it is
 * given back to its queue with basic.nack, delivered again at once (most likely to this consumer)
 * and held again.
 *
 * Why a bound, and why 20 minutes: RabbitMQ's consumer_timeout (30 minutes by default, on 3.10 as
 * on 4.x, checked once a minute) ends any delivery held longer. Up to 4.2 it closes the channel,
 * which returns every message on it, each counted towards the delivery limit, and fails the acks of
 * those being handled; from 4.3 it cancels the consumer, and a channel closed with messages on it
 * (as this class does after a cancel) counts them. Giving a message back before then returns that
 * one alone, and since 4.3 a nack does not count: a message is then held through an outage of any
 * length (production runs 4.3+). Up to 4.2 every return counts, nack included, so a message is
 * parked after about 20 × 20 minutes (almost seven hours) of outage rather than the ten hours of
 * the broker's own timeouts; that is the price of never having a channel closed under the consumer.
 * Twenty minutes leaves ten before the default timeout for the attempt in progress when the bound
 * passes (WEBHOOK_TIMEOUT bounds it) and the broker's once-a-minute check. The broker's
 * timeout is left alone rather than raised: in Kubernetes the broker is not ours to configure, and
 * the per-queue x-consumer-timeout argument and policy arrived in RabbitMQ 3.12, after this
 * machine's 3.10. Operators must not set consumer_timeout below 25 minutes (docs/operations.md).
 */
const HOLD_LIMIT_MS = 20 * 60_000;

/** How long a publish on a message's channel may wait for RabbitMQ's confirm (see retireUnconfirmed). */
const PUBLISH_TIMEOUT_MS = 10_000;

export type Handler = (message: ConsumeMessage, publisher: Publisher) => Promise<Disposition>;

/**
 * How the Consumer settles a message: a handler's Disposition, or returned to its queue, either
 * after a failure of its own ('retry', basic.reject: counts towards the delivery limit) or through no
 * fault of its own ('release', basic.nack: does not count since RabbitMQ 4.3).
 */
type Outcome = Disposition | 'retry' | 'release';

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
  /**
   * The longest a message is held while a dependency is away before it is given back to its
   * queue; default 20 minutes, below RabbitMQ's consumer_timeout (see HOLD_LIMIT_MS).
   */
  holdLimitMs?: number;
  /**
   * After this long with no delivery and nothing held, the consumer moves to a new channel, which
   * gives back whatever the queue still counts as delivered on the old one (see reopenIfIdle).
   * 0 or unset: never.
   */
  idleReopenMs?: number;
  /** How long a handler's publish may wait for its confirm; default 10 s (see retireUnconfirmed). */
  publishTimeoutMs?: number;
}

/** The channel consumed on now. `retired`: being replaced; what still arrives on it is not handled. */
interface Current {
  ch: ConfirmChannel;
  consumerTag: string;
  acks: ChannelAcks;
  retired: boolean;
}

/**
 * Consumes a queue with manual acks through a channel that reconnects by itself. Each message is
 * acknowledged, and anything it leads to is published, on the channel it arrived on: after a
 * reconnect that channel is gone, the ack fails harmlessly, and RabbitMQ redelivers the message,
 * which is the at-least-once we want. (Acking on the new channel would name a delivery tag it never
 * issued and make RabbitMQ close it.)
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
export class Consumer {
  private readonly options: ConsumerOptions;
  private readonly logger: Logger;
  private readonly channel: RecoveringChannel;
  private readonly inFlight = new Set<Promise<void>>();
  private current: Current | undefined;
  /** The last delivery, settlement or new channel: what idleness is counted from. */
  private activeAt = Date.now();
  private readonly watchdog: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Handling failures in a row, for the pause before a failed message is returned. */
  private failures = 0;
  /** Handlings failing while a dependency is away: one line per outage, not one per attempt. */
  private readonly away: OutageLog;
  private readonly pauses = new Set<() => void>();
  private markConsuming!: () => void;
  /** Resolves the first time the consumer consumes, on whichever channel. */
  private readonly consuming = new Promise<void>((resolve) => (this.markConsuming = resolve));

  constructor(connection: AmqpConnectionManager, options: ConsumerOptions, logger: Logger) {
    this.options = options;
    this.logger = logger.child({ consumer: options.name });
    this.away = new OutageLog(
      this.logger,
      'handling failed while a dependency is away; message kept and tried again',
    );
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
          const current: Current = { ch, consumerTag: '', acks, retired: false };
          const { consumerTag } = await ch.consume(options.queue, (message) => {
            if (!message) return this.cancelled(ch);
            // Its channel is being replaced (reopenIfIdle, retireUnconfirmed): the close returns the
            // message to its queue.
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
        },
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
    this.moveToNewChannel(current);
  }

  /** Acknowledges what is settled on the retired channel, then consumes on a new one. */
  private moveToNewChannel(current: Current): void {
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
   * A publish on this channel went unconfirmed for publishTimeoutMs (its handler fails, and its
   * message goes back to the queue): the channel takes no more messages, and once every message in
   * hand is settled the consumer moves to a new one. Why: a channel that missed a quorum queue's
   * leader change goes on sending that queue's enqueues to the old leader, so every later publish
   * there would wait in vain too (docs/operations.md, "Supported RabbitMQ versions").
   */
  private retireUnconfirmed(current: Current): void {
    if (this.stopping || current.retired) return;
    current.retired = true;
    this.logger.warn(
      { queue: this.options.queue, timeoutMs: this.options.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS },
      'a publish went unconfirmed past its timeout: consuming on a new channel once the messages in hand are settled',
    );
    void (async () => {
      await current.ch.cancel(current.consumerTag).catch(() => {});
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      if (this.stopping || this.current !== current) current.acks.flush();
      else this.moveToNewChannel(current);
    })();
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
    const { ch, acks } = current;
    const timeoutMs = this.options.publishTimeoutMs ?? PUBLISH_TIMEOUT_MS;
    const publisher: Publisher = {
      publish: (exchange, routingKey, content, options) =>
        withTimeout(
          new Promise<void>((resolve, reject) => {
            ch.publish(exchange, routingKey, content, { persistent: true, ...options }, (err) =>
              err ? reject(err as Error) : resolve(),
            );
          }),
          timeoutMs,
          () => {
            this.retireUnconfirmed(current);
            return new Error(`RabbitMQ did not confirm the publish within ${timeoutMs} ms`);
          },
        ),
    };
    const outcome = await this.settle(message, publisher);
    this.activeAt = Date.now();
    if (outcome === 'ack') acks.ack(message);
    else if (outcome === 'park')
      acks.reject(message, { requeue: false }); // dead-lettered to the parked queue
    else if (outcome === 'retry')
      acks.reject(message, { requeue: true }); // its own failure: counts
    else acks.release(message); // not its fault: does not count (RabbitMQ 4.3+)
  }

  /** Handles the message until it is done with, or to be returned to its queue (see the class). */
  private async settle(message: ConsumeMessage, publisher: Publisher): Promise<Outcome> {
    const giveBackAt = Date.now() + (this.options.holdLimitMs ?? HOLD_LIMIT_MS);
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
            { messageId, holdLimitMs: this.options.holdLimitMs ?? HOLD_LIMIT_MS },
            'message held its longest while a dependency is away; given back to its queue before the consumer timeout',
          );
          return 'release';
        }
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

  /**
   * Stops taking messages, lets those in flight finish (their attempts are bounded by
   * WEBHOOK_TIMEOUT), then closes the channel. Unfinished work past the caller's deadline stays
   * unacked and is redelivered to another dispatcher.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watchdog);
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
