import type { Kysely } from 'kysely';
import type { AmqpConnectionManager } from '@trips/broker/client';
import type { Database } from '@trips/db';
import { tryPublishLock } from '@trips/db/advisory-locks';
import {
  hasUnpublishedEvents,
  markPublished,
  takeUnpublished,
  unpublishedHead,
  unpublishedHeadSeqs,
  type UnpublishedEvent,
} from '@trips/db/events';
import { begin, commit, onOneConnection, rollback, runScript, type Statement } from '@trips/db/script';
import { atMostEvery, type Logger } from '@trips/runtime';
import { EventsChannel } from './events-channel.ts';
import { quietAgencyEvents } from './express.ts';

/** How long the publisher waits before trying again events that no queue took. */
export const UNROUTABLE_RETRY_MS = 1_000;
/**
 * How long the publisher waits after RabbitMQ refused a whole batch because the dispatcher's events
 * queue was full: shorter than the poll interval, as the queue holds only a few dozen milliseconds
 * of fan-out and must not run dry while the publisher sleeps (service.ts wakes the loop after it).
 */
export const REFUSED_RETRY_MS = 5;
/**
 * The smallest batch after refusals (see `window`), unless the batch size is smaller: a batch the
 * queue refused whole (it took 0) must still probe for room.
 */
export const MIN_WINDOW = 16;
/** Events published at once, then confirmed before the next chunk goes (runBatch says why). */
export const PUBLISH_CHUNK = 20;
/**
 * The chunk while the queue takes whole batches (the window at the batch size): with a confirm
 * round trip per chunk of 20, publishing fell behind recording when nothing was full. The first refusal after such a calm puts at most this many events
 * ahead of the next agency's, once; refusals then shrink the window, and chunks are PUBLISH_CHUNK
 * until whole batches go again.
 */
export const CALM_PUBLISH_CHUNK = 80;

export interface PublisherOptions {
  exchange: string;
  /** Where quiet agencies' events go (express.ts), bound to the dispatcher's express queue. */
  expressExchange: string;
  batchSize: number;
  publishTimeoutMs: number;
  /** Told of the events RabbitMQ took, once the batch that forgets them has committed (metrics). */
  onPublished?: (events: readonly UnpublishedEvent[]) => void;
  /**
   * Called when a batch opened by the recorder (`open`) leaves work to the publisher's loop: events
   * still waiting, the queue full, the lock held elsewhere, or a failure to try again after the
   * loop's back-off.
   */
  wake?: () => void;
}

/**
 * A publish batch opened in the last round trip of a recorder's batch, after its COMMIT, on the
 * same connection (Recorder.runBatch): the events just recorded go out without a round trip to
 * open the batch, nor a second read of their rows.
 */
export interface PublishOpening {
  /** BEGIN, try PUBLISH_LOCK, the seqs at the head of events_unpublished: to follow a COMMIT. */
  readonly statements: readonly Statement[];
  /**
   * Goes on from the statements' results, on the connection they ran on, with the events just
   * recorded at hand. Rejects when the batch failed (the caller's connection then rolls back);
   * the publisher has logged it and woken its loop.
   */
  publish(conn: Kysely<Database>, results: unknown[][], recorded: readonly UnpublishedEvent[]): Promise<void>;
  /** The statements were not sent, or their script failed: the publisher is free again. */
  cancel(): void;
}

/**
 * Publishes recorded events to RabbitMQ after their rows committed, with publisher confirms.
 *
 * One replica publishes at a time (PUBLISH_LOCK, tried without waiting), in seq order. A batch's
 * rows leave events_unpublished only in the transaction that saw every confirm, so a crash or a
 * broker outage in between republishes them later with the same event ids: at least once,
 * duplicates carry the same id (spec 6.5). Each message carries the capture time of its event's
 * change, which the row keeps, in a header (@trips/broker's message-properties.ts), republished
 * ones too. While the broker is away the channel wrapper reconnects and the batch fails after
 * publishTimeoutMs, to be tried again. A channel RabbitMQ closes while the connection lives (the
 * exchange declared with another type, 406) is replaced after a pause, by RecoveringChannel, as
 * the dispatcher's are; one that leaves a publish unconfirmed for publishTimeoutMs while the
 * connection lives is replaced at once (events-channel.ts).
 *
 * The dispatcher's events queue is bounded (@trips/broker's topology.ts): when it is full,
 * RabbitMQ refuses (nacks) the publishes. Refused events stay unpublished and go again in the
 * next round (after REFUSED_RETRY_MS when the queue took none), in a batch no larger than what the
 * queue took last time, or MIN_WINDOW if that is more (and never more than the batch size), then
 * doubling again, so a full queue costs a few refusals per round, not a whole batch's. The batch is
 * taken round-robin across agencies (takeUnpublished), so room goes to every agency's oldest event
 * first: a bulk import waits here, not in the queue ahead of other agencies' events. Confirmed
 * events are marked published even when others of their batch were refused. The events of quiet
 * agencies (express.ts) go first, to the express exchange and the dispatcher's express queue,
 * which no import fills: behind no one's import at all.
 *
 * The bound is soft by up to a batch: a quorum queue finds itself full only after the enqueue that
 * overfills it, then tells the publishing channels, which refuse from then on, until it tells them
 * it is below its bound again. So a batch published while the queue has room is taken whole, past
 * the bound by up to the batch, and one published while it is full is refused whole (measured on
 * RabbitMQ 3.10 in test/backpressure.test.ts; the quorum queue guide says the limit can be
 * overshot). The window keeps that overshoot small while the queue stays full: a batch refused
 * whole is followed by one of MIN_WINDOW events, doubling while every batch is taken whole.
 *
 * Messages are published `mandatory`: one that no queue takes (the dispatcher, which declares and
 * binds the queues, not deployed yet on a fresh broker) comes back as unroutable and its event
 * stays unpublished, tried again every UNROUTABLE_RETRY_MS, instead of being confirmed into nowhere.
 */
export class Publisher {
  private readonly db: Kysely<Database>;
  private readonly events: EventsChannel;
  private readonly options: PublisherOptions;
  private readonly logger: Logger;

  /** No batch before this (ms): the last one found no queue bound to the exchange. */
  private holdUntil = 0;
  private readonly unroutableWarningDue = atMostEvery(60_000);
  private readonly refusedNoticeDue = atMostEvery(60_000);
  /** Events taken per batch: the batch size, or less while the queue refuses some (see the class). */
  private window: number;
  /** The last batch was refused whole: the queue is full, the next round is due in REFUSED_RETRY_MS. */
  private full = false;
  /** See moreWaiting. */
  private more = false;
  /** The next batch skips asking whether any event waits (expect()). */
  private expecting = false;
  /** The last batch failed: the loop tries again after its back-off, and `open` answers nothing. */
  private failing = false;
  /** This process's batch under way, the loop's or an opening's: one at a time. */
  private inFlight: Promise<void> | undefined;
  /**
   * A batch the recorder opened has read the head of events_unpublished since the loop last asked
   * whether any event waits: the loop need not ask (see `open`).
   */
  private headSeen = false;

  constructor(
    db: Kysely<Database>,
    connection: AmqpConnectionManager,
    options: PublisherOptions,
    logger: Logger,
  ) {
    this.db = db;
    this.options = options;
    this.logger = logger;
    this.window = options.batchSize;
    this.events = new EventsChannel(connection, options, logger);
  }

  /** Resolves once no batch is under way (one the recorder opened goes on after its batch). */
  async settled(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  /** Closes the channel once the batch under way, if any, has finished; call after the loop's last. */
  async close(): Promise<void> {
    await this.settled();
    await this.events.close();
  }

  /** Whether the last batch found the events queue full (refused whole): try again in REFUSED_RETRY_MS. */
  get queueFull(): boolean {
    return this.full;
  }

  /** Events were just recorded: the next batch need not ask whether any wait. */
  expect(): void {
    this.expecting = true;
  }

  /**
   * Whether events are likely still waiting after the last batch: it was full, or the queue
   * refused some. Then the next batch may go at once; otherwise it waits for the next recording.
   */
  get moreWaiting(): boolean {
    return this.more;
  }

  /**
   * Publishes one batch; answers how many events a queue took (0 when idle or not the publisher).
   * Two round trips to Postgres, each a script (@trips/db/script): one opens the transaction,
   * tries the lock and reads the head of events_unpublished; the other forgets what RabbitMQ
   * confirmed and commits.
   */
  async runBatch(): Promise<number> {
    await this.settled();
    const release = this.claim();
    try {
      this.full = false;
      this.more = false;
      if (Date.now() < this.holdUntil) return 0;
      const expected = this.expecting;
      this.expecting = false;
      if (!expected && this.headSeen) {
        this.headSeen = false;
        return 0;
      }
      if (!expected && !(await hasUnpublishedEvents(this.db))) return 0;
      const published = await onOneConnection(this.db, async (conn) => {
        const [, lock, head] = await runScript(conn, [begin, tryPublishLock, unpublishedHead(this.window)]);
        return this.publish(conn, lock as { ok: boolean }[], head as UnpublishedEvent[]);
      });
      this.failing = false;
      return published;
    } catch (error) {
      this.failing = true;
      throw error;
    } finally {
      release();
    }
  }

  /**
   * A batch for the recorder to open after its COMMIT (PublishOpening), or none: while another
   * batch is under way, or the last one failed, left events waiting, found the queue full or
   * refusing, or no queue bound. Then the loop publishes, as it does every event it is woken for.
   *
   * Such a batch reads the head of the whole table, whoever recorded its events (another replica,
   * one that died since): it publishes them too, or, with more than it takes, wakes the loop. So
   * while the recorder opens batches, the loop's idle rounds skip asking whether any event waits;
   * the first round after the recorder stops opening them asks again.
   */
  open(): PublishOpening | undefined {
    const calm = !this.failing && !this.more && this.window >= this.options.batchSize;
    if (this.inFlight || !calm || Date.now() < this.holdUntil) return undefined;
    const release = this.claim();
    return {
      statements: [begin, tryPublishLock, unpublishedHeadSeqs(this.window)],
      publish: async (conn, [, lock, seqs], recorded) => {
        try {
          this.full = false;
          const bySeq = new Map(recorded.map((e) => [e.seq, e]));
          const head = (seqs as { seq: number }[]).map(({ seq }) => bySeq.get(seq));
          // Rows of events recorded before this batch are not at hand: takeUnpublished reads them.
          const held = head.every((e) => e !== undefined) ? head : undefined;
          const published = await this.publish(conn, lock as { ok: boolean }[], held);
          this.failing = false;
          if (this.more || this.full || published === 0) {
            this.expecting = true;
            this.options.wake?.();
          } else this.headSeen = true;
        } catch (error) {
          this.failing = true;
          this.logger.error({ err: error }, 'publish after recording failed (the loop tries again)');
          this.options.wake?.();
          throw error;
        } finally {
          release();
        }
      },
      cancel: release,
    };
  }

  /** Marks a batch under way until the returned function is called. */
  private claim(): () => void {
    let release!: () => void;
    const inFlight = new Promise<void>((resolve) => (release = resolve));
    this.inFlight = inFlight;
    return () => {
      if (this.inFlight === inFlight) this.inFlight = undefined;
      release();
    };
  }

  /**
   * The batch, once its transaction is open and has tried the lock: takes the head (read already,
   * or, given none, read by takeUnpublished), publishes, forgets what was confirmed, commits.
   */
  private async publish(
    conn: Kysely<Database>,
    lock: { ok: boolean }[],
    head: UnpublishedEvent[] | undefined,
  ): Promise<number> {
    if (!lock[0]!.ok) {
      await rollback(conn);
      return 0;
    }
    const window = this.window;
    const taken = await takeUnpublished(conn, window, head);
    // Quiet agencies' events first, to the express queue: they never wait behind an import.
    const express = quietAgencyEvents(taken, window);
    const events = [...taken.filter((e) => express.has(e)), ...taken.filter((e) => !express.has(e))];
    // In chunks, stopping at the first refusal: a queue bounded by x-max-length takes a whole
    // burst while it is below its bound, so one large burst would put a whole batch ahead of the
    // next agency's event. A chunk at a time, the queue overshoots by one chunk at most; larger
    // chunks while it has not refused lately (CALM_PUBLISH_CHUNK).
    const chunk = window >= this.options.batchSize ? CALM_PUBLISH_CHUNK : PUBLISH_CHUNK;
    const { confirmed, routed, refused, failure } = await this.events.send(events, express, chunk);
    // Failed otherwise (not confirmed in time, the channel gone): the broker is away; with
    // nothing confirmed the batch fails, to be tried again after the loop's back-off.
    if (confirmed.length === 0 && failure) throw failure;
    if (refused > 0) this.refused(confirmed.length, refused);
    else this.window = Math.min(this.options.batchSize, this.window * 2);
    this.more = taken.length >= window || refused > 0;
    if (this.more) this.expecting = true;
    if (routed.length < confirmed.length) this.holdOff(confirmed.length - routed.length);
    await runScript(conn, [...markPublished(routed.map((e) => e.seq)), commit]);
    this.options.onPublished?.(routed);
    if (routed.length) this.logBatch(routed);
    return routed.length;
  }

  private logBatch(routed: UnpublishedEvent[]): void {
    for (const e of routed) this.logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'published');
    this.logger.info(
      {
        published: routed.length,
        eventIds: routed.length <= 10 ? routed.map((e) => e.id) : undefined,
        seqs: [routed[0]!.seq, routed.at(-1)!.seq],
      },
      'batch published',
    );
  }

  /**
   * The queue was full: the next batch is no larger than what it took, about what the dispatchers
   * took from it meanwhile. It follows at once when the queue took some (an agency's new event then
   * waits one short round); a batch it took none of waits REFUSED_RETRY_MS.
   */
  private refused(taken: number, refused: number): void {
    // Never above the batch size, though: the floor must not raise a RECORDER_BATCH_SIZE below it.
    this.window = Math.min(this.options.batchSize, Math.max(MIN_WINDOW, taken));
    if (taken === 0) {
      this.holdUntil = Math.max(this.holdUntil, Date.now() + REFUSED_RETRY_MS);
      this.full = true;
    }
    if (!this.refusedNoticeDue()) return;
    this.logger.info(
      { refused, taken, exchange: this.options.exchange },
      "events held back: the dispatcher's events queue is full (they go out as it drains)",
    );
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
