// The publisher's channel to RabbitMQ: sends a batch's events with publisher confirms, a few
// unconfirmed at a time, and says which a queue took, how many RabbitMQ refused, and what else failed.
import { eventMessageProperties, PublishRefused } from '@trips/broker';
import { ConfirmPublisher, type AmqpConnectionManager, type Message } from '@trips/broker/client';
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

/** Events to send, in order; `express`: those that go to the express exchange. */
export interface Outgoing {
  events: readonly UnpublishedEvent[];
  express: ReadonlySet<StoredEvent>;
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
 * not counted as routed. A publish unconfirmed within publishTimeoutMs fails, and when the
 * connection lives the channel is replaced (ConfirmPublisher says why); the unconfirmed events stay
 * unpublished and go again, with the same ids.
 */
export class EventsChannel {
  private readonly publisher: ConfirmPublisher;
  private readonly options: EventsChannelOptions;
  /** Ids of the current batch's messages that RabbitMQ handed back (basic.return). */
  private readonly returned = new Set<string>();

  constructor(connection: AmqpConnectionManager, options: EventsChannelOptions, logger: Logger) {
    this.options = options;
    this.publisher = new ConfirmPublisher(
      connection,
      {
        name: 'events-publisher',
        timeoutMs: options.publishTimeoutMs,
        // Run on every channel opened, after a reconnect or a replaced channel too.
        setup: async (ch) => {
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
   * Sends the events in order with at most `inFlight` of them unconfirmed at a time: each confirm
   * lets the next go, and the first failure lets no more go (Publisher.publish says why); those in
   * flight then settle. `express`: those that go to the express exchange. `more`, when given, is
   * asked for more events once no more than `inFlight` wait to go, while none failed (a batch's
   * next take); they go on in the same window, after the others. It answers none to end the batch.
   *
   * Why a window that slides rather than chunks each confirmed whole before the next: a quorum
   * queue confirms an enqueue once it is written, in batches as its writes allow, so a chunk waited
   * for its slowest confirm while the first ones had made room; measured against the machine's
   * RabbitMQ, 80 in flight took about twice the messages a second of chunks of 80, about as many as
   * chunks of 250. The bound on what is in flight, which is what a full queue overshoots by, is the same.
   */
  async send(batch: Outgoing, inFlight: number, more?: () => Promise<Outgoing | undefined>): Promise<Sent> {
    this.returned.clear();
    const { events, settled } = await this.slide(batch, inFlight, more);
    const confirmed = events.filter((_, i) => settled[i]?.status === 'fulfilled');
    const failures = settled.flatMap((r) => (r?.status === 'rejected' ? [r.reason as Error] : []));
    const failure = failures.find((f) => !isRefusal(f));
    return {
      confirmed,
      // RabbitMQ sends an unroutable message's basic.return before its confirm, so every return of
      // this batch has arrived by now.
      routed: confirmed.filter((e) => !this.returned.has(e.id)),
      refused: failures.filter(isRefusal).length,
      failure,
    };
  }

  /**
   * Every event the batch had (`more`'s too) and each one's publish settled, by its place; none
   * for those not sent after a failure. Rejects with `more`'s error, once those in flight settled.
   */
  private slide(
    batch: Outgoing,
    inFlight: number,
    more: (() => Promise<Outgoing | undefined>) | undefined,
  ): Promise<{ events: UnpublishedEvent[]; settled: (PromiseSettledResult<unknown> | undefined)[] }> {
    const events = [...batch.events];
    const express = new Set(batch.express);
    const settled: (PromiseSettledResult<unknown> | undefined)[] = [];
    let next = 0;
    let pending = 0;
    let failed = false;
    let asking = false;
    let ended = !more;
    let error: { cause: unknown } | undefined;
    return new Promise((resolve, reject) => {
      const pump = () => {
        while (!failed && pending < inFlight && next < events.length) {
          const i = next++;
          pending++;
          this.publish(events[i]!, express.has(events[i]!)).then(
            (value) => done(i, { status: 'fulfilled', value }),
            (reason: unknown) => done(i, { status: 'rejected', reason }),
          );
        }
        // Asked while the last window of events goes out: its answer comes before they all have.
        if (!failed && !ended && !asking && events.length - next <= inFlight) ask();
        if (pending > 0 || asking) return;
        if (error) reject(error.cause as Error);
        else resolve({ events, settled });
      };
      const done = (i: number, result: PromiseSettledResult<unknown>) => {
        settled[i] = result;
        if (result.status === 'rejected') failed = true;
        pending--;
        pump();
      };
      const ask = () => {
        asking = true;
        more!().then(
          (taken) => {
            if (taken?.events.length) {
              events.push(...taken.events);
              for (const e of taken.express) express.add(e);
            } else ended = true;
            asking = false;
            pump();
          },
          (cause: unknown) => {
            error = { cause };
            failed = ended = true;
            asking = false;
            pump();
          },
        );
      };
      pump();
    });
  }

  private async publish(e: UnpublishedEvent, express: boolean): Promise<unknown> {
    const exchange = express ? this.options.expressExchange : this.options.exchange;
    const properties = { ...eventMessageProperties(e), mandatory: true };
    // Tracing on: the span's context goes in the headers, so it must start before the publish.
    const tracer = tracing.tracer;
    const traced = tracer && tracePublish(tracer, e, exchange, properties);
    const confirmed = this.publisher.publish(
      exchange,
      e.type,
      Buffer.from(JSON.stringify(toMessage(e))),
      properties,
    );
    return traced ? traced(confirmed) : confirmed;
  }

  async close(): Promise<void> {
    await this.publisher.close();
  }
}

/** RabbitMQ refused the message (basic.nack): a bounded queue it routes to is full. */
const isRefusal = (error: Error) => error instanceof PublishRefused;
