import { sql, type Kysely } from 'kysely';
import type { ChannelWrapper } from 'amqp-connection-manager';
import { PUBLISH_LOCK, markPublished, takeUnpublished, type Database } from '@trips/db';
import type { Logger } from '@trips/runtime';
import { toMessage } from './message.ts';

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
 * and the batch fails after publishTimeoutMs, to be tried again.
 */
export class Publisher {
  private readonly db: Kysely<Database>;
  private readonly channel: ChannelWrapper;
  private readonly options: PublisherOptions;
  private readonly logger: Logger;

  constructor(db: Kysely<Database>, channel: ChannelWrapper, options: PublisherOptions, logger: Logger) {
    this.db = db;
    this.channel = channel;
    this.options = options;
    this.logger = logger;
  }

  /** Publishes one batch; answers how many events were confirmed (0 when idle or not the publisher). */
  async runBatch(): Promise<number> {
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
      await Promise.all(
        events.map((e) =>
          this.channel.publish(this.options.exchange, e.type, Buffer.from(JSON.stringify(toMessage(e))), {
            persistent: true,
            contentType: 'application/json',
            messageId: e.id,
            type: e.type,
            timestamp: Math.floor(new Date(e.created_at).getTime() / 1000),
            headers: { agency_id: e.agency_id },
            timeout: this.options.publishTimeoutMs,
          }),
        ),
      );
      await markPublished(
        trx,
        events.map((e) => e.seq),
      );
      for (const e of events) this.logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'published');
      if (events.length) {
        this.logger.info(
          {
            published: events.length,
            eventIds: events.length <= 10 ? events.map((e) => e.id) : undefined,
            seqs: [events[0]!.seq, events.at(-1)!.seq],
          },
          'batch published',
        );
      }
      return events.length;
    });
  }
}
