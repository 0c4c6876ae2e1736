// The publisher's channel to RabbitMQ: sends a batch's events with publisher confirms, a chunk at a
// time, and says which a queue took, how many RabbitMQ refused, and what else failed.
import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ConfirmChannel, Message } from 'amqplib';
import { eventMessageProperties } from '@trips/broker';
import { RecoveringChannel } from '@trips/broker/client';
import type { StoredEvent, UnpublishedEvent } from '@trips/db/events';
import { tracing, type Logger } from '@trips/runtime';
import { toMessage } from './message.ts';
import { tracePublish } from './tracing.ts';

export interface EventsChannelOptions {
  exchange: string;
  /** Where quiet agencies' events go (express.ts), bound to the dispatcher's express queue. */
  expressExchange: string;
  publishTimeoutMs: number;
}

/** What became of a batch's events. */
export interface Sent {
  /** Those RabbitMQ confirmed, in the order sent. */
  confirmed: UnpublishedEvent[];
  /** Of those, the ones a queue took: RabbitMQ returned the others as unroutable. */
  routed: UnpublishedEvent[];
  /** How many RabbitMQ refused (basic.nack): a bounded queue they route to is full. */
  refused: number;
  /** The first failure of another kind: not confirmed in time, or the channel gone. */
  failure?: Error;
}

/**
 * Messages are published `mandatory`, so one that no queue takes comes back (basic.return) and is
 * not counted as routed. A channel that lets a confirm go unanswered for publishTimeoutMs while the
 * connection lives is replaced: a quorum queue's client on the broker's side of a channel can go on
 * sending to a leader that is gone (docs/operations.md, "Supported RabbitMQ versions"), and a new
 * channel starts afresh. Its unconfirmed events stay unpublished and go again, with the same ids.
 */
export class EventsChannel {
  private readonly channel: RecoveringChannel;
  private readonly connection: AmqpConnectionManager;
  private readonly options: EventsChannelOptions;
  private readonly logger: Logger;
  /** Ids of the current batch's messages that RabbitMQ handed back (basic.return). */
  private readonly returned = new Set<string>();

  constructor(connection: AmqpConnectionManager, options: EventsChannelOptions, logger: Logger) {
    this.connection = connection;
    this.options = options;
    this.logger = logger;
    // Run on every channel opened, after a reconnect or a replaced channel too.
    this.channel = new RecoveringChannel(
      connection,
      {
        name: 'events-publisher',
        setup: async (ch: ConfirmChannel) => {
          ch.on('return', (message: Message) => {
            const id = message.properties.messageId as string | undefined;
            if (id) this.returned.add(id);
          });
          await ch.assertExchange(options.exchange, 'topic', { durable: true });
          await ch.assertExchange(options.expressExchange, 'topic', { durable: true });
        },
      },
      logger,
    );
  }

  /**
   * Sends the events in chunks of `chunkSize`, each confirmed before the next goes, stopping after
   * the first chunk with a failure (Publisher.publish says why). `express`: those that go to the
   * express exchange.
   */
  async send(
    events: readonly UnpublishedEvent[],
    express: ReadonlySet<StoredEvent>,
    chunkSize: number,
  ): Promise<Sent> {
    this.returned.clear();
    const settled: PromiseSettledResult<unknown>[] = [];
    for (let i = 0; i < events.length; i += chunkSize) {
      const chunk = events.slice(i, i + chunkSize);
      const results = await Promise.allSettled(chunk.map((e) => this.publish(e, express.has(e))));
      settled.push(...results);
      if (results.some((r) => r.status === 'rejected')) break;
    }
    const confirmed = events.filter((_, i) => settled[i]?.status === 'fulfilled');
    const failures = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    const failure = failures.find((f) => !isRefusal(f));
    if (failure?.message === 'timeout' && this.connection.isConnected()) this.replace();
    return {
      confirmed,
      // RabbitMQ sends an unroutable message's basic.return before its confirm, so every return of
      // this batch has arrived by now.
      routed: confirmed.filter((e) => !this.returned.has(e.id)),
      refused: failures.filter(isRefusal).length,
      failure,
    };
  }

  private publish(e: UnpublishedEvent, express: boolean): Promise<unknown> {
    const exchange = express ? this.options.expressExchange : this.options.exchange;
    const properties = {
      ...eventMessageProperties(e),
      mandatory: true,
      timeout: this.options.publishTimeoutMs,
    };
    // Tracing on: the span's context goes in the headers, so it must start before the publish.
    const tracer = tracing.tracer;
    const traced = tracer && tracePublish(tracer, e, exchange, properties);
    const confirmed = this.channel.wrapper.publish(
      exchange,
      e.type,
      Buffer.from(JSON.stringify(toMessage(e))),
      properties,
    );
    return traced ? traced(confirmed) : confirmed;
  }

  private replace(): void {
    this.logger.warn(
      { timeoutMs: this.options.publishTimeoutMs },
      'a publish went unconfirmed past its timeout on a live connection: publishing on a new channel',
    );
    this.channel.reopen();
  }

  async close(): Promise<void> {
    await this.channel.close();
  }
}

/** RabbitMQ refused the message (basic.nack): a bounded queue it routes to is full. */
const isRefusal = (error: Error) => error.message === 'message nacked';
