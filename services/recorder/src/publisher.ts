import { sql, type Kysely } from 'kysely';
import type { AmqpConnectionManager } from 'amqp-connection-manager';
import type { ConfirmChannel, Message } from 'amqplib';
import { PUBLISH_LOCK, markPublished, takeUnpublished, type Database } from '@trips/db';
import { atMostEvery, type Logger } from '@trips/runtime';
import { RecoveringChannel } from '@trips/runtime/amqp';
import { toMessage } from './message.ts';

/** How long the publisher waits before trying again events that no queue took. */
export const UNROUTABLE_RETRY_MS = 1_000;

export interface PublisherOptions {
  exchange: string;
  batchSize: number;
  publishTimeoutMs: number;
}

/**
 * Publishes recorded events to RabbitMQ after their rows committed, with publisher confirms.
 *
 * One replica publishes at a time (PUBLISH_LOCK, tried without waiting), in seq order. A batch's
 * rows leave events_unpublished only in the transaction that saw every confirm, so a crash or a
 * broker outage in between republishes them later with the same event ids: at least once,
 * duplicates carry the same id (spec 6.5). While the broker is away the channel wrapper reconnects
 * and the batch fails after publishTimeoutMs, to be tried again. A channel RabbitMQ closes while the
 * connection lives (the exchange declared with another type, 406) is replaced after a pause, by
 * RecoveringChannel, as the dispatcher's are.
 *
 * Messages are published `mandatory`: one that no queue takes (the dispatcher, which declares and
 * binds the queues, not deployed yet on a fresh broker) comes back as unroutable and its event
 * stays unpublished, tried again every UNROUTABLE_RETRY_MS, instead of being confirmed into nowhere.
 */
export class Publisher {
  private readonly db: Kysely<Database>;
  private readonly channel: RecoveringChannel;
  private readonly options: PublisherOptions;
  private readonly logger: Logger;

  /** Ids of this batch's messages that RabbitMQ handed back (basic.return): no queue took them. */
  private readonly returned = new Set<string>();
  /** No batch before this (ms): the last one found no queue bound to the exchange. */
  private holdUntil = 0;
  private readonly unroutableWarningDue = atMostEvery(60_000);

  constructor(
    db: Kysely<Database>,
    connection: AmqpConnectionManager,
    options: PublisherOptions,
    logger: Logger,
  ) {
    this.db = db;
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
        },
      },
      logger,
    );
  }

  /** Closes the channel; call after the last batch has finished. */
  close(): Promise<void> {
    return this.channel.close();
  }

  /** Publishes one batch; answers how many events a queue took (0 when idle or not the publisher). */
  async runBatch(): Promise<number> {
    if (Date.now() < this.holdUntil) return 0;
    const pending = await sql<{
      any: boolean;
    }>`SELECT EXISTS (SELECT 1 FROM events_unpublished) AS any`.execute(this.db);
    if (!pending.rows[0]!.any) return 0;
    return this.db.transaction().execute(async (trx) => {
      const lock = await sql<{
        ok: boolean;
      }>`SELECT pg_try_advisory_xact_lock(${PUBLISH_LOCK}) AS ok`.execute(trx);
      if (!lock.rows[0]!.ok) return 0;
      const events = await takeUnpublished(trx, this.options.batchSize);
      this.returned.clear();
      await Promise.all(
        events.map((e) =>
          this.channel.wrapper.publish(
            this.options.exchange,
            e.type,
            Buffer.from(JSON.stringify(toMessage(e))),
            {
              mandatory: true,
              persistent: true,
              contentType: 'application/json',
              messageId: e.id,
              type: e.type,
              timestamp: Math.floor(new Date(e.created_at).getTime() / 1000),
              headers: { agency_id: e.agency_id },
              timeout: this.options.publishTimeoutMs,
            },
          ),
        ),
      );
      // RabbitMQ sends an unroutable message's basic.return before its confirm, so every return of
      // this batch has arrived by now.
      const routed = events.filter((e) => !this.returned.has(e.id));
      if (routed.length < events.length) this.holdOff(events.length - routed.length);
      await markPublished(
        trx,
        routed.map((e) => e.seq),
      );
      for (const e of routed) this.logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'published');
      if (routed.length) {
        this.logger.info(
          {
            published: routed.length,
            eventIds: routed.length <= 10 ? routed.map((e) => e.id) : undefined,
            seqs: [routed[0]!.seq, routed.at(-1)!.seq],
          },
          'batch published',
        );
      }
      return routed.length;
    });
  }

  private holdOff(unroutable: number): void {
    this.holdUntil = Date.now() + UNROUTABLE_RETRY_MS;
    if (!this.unroutableWarningDue()) return;
    this.logger.warn(
      { unroutable, exchange: this.options.exchange, retryInMs: UNROUTABLE_RETRY_MS },
      'events left unpublished: no queue is bound to the exchange yet (the dispatcher declares it)',
    );
  }
}
