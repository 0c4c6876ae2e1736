import type { Kysely } from 'kysely';
import type { AmqpConnectionManager } from '@trips/broker/client';
import type { Database } from '@trips/db';
import { tryPublishLock } from '@trips/db/advisory-locks';
import {
  hasUnpublishedEvents,
  markPublished,
  restoreUnpublished,
  takeMoreUnpublished,
  takeUnpublished,
  unpublishedHead,
  unpublishedHeadSeqs,
  type UnpublishedEvent,
} from '@trips/db/events';
import { begin, commit, onOneConnection, rollback, runScript, type Statement } from '@trips/db/script';
import type { Logger } from '@trips/runtime';
import { EventsChannel, type Outgoing } from './events-channel.ts';
import { quietAgencyEvents } from './express.ts';
import { PublishPace } from './publish-pace.ts';

/**
 * Takes a batch goes on to while the queue takes whole batches (Publisher.publish): its events
 * are forgotten, and put back if need be, only when it commits, so a crash republishes at most
 * this many windows.
 */
const MAX_TAKES = 8;

/** A take as it goes out: quiet agencies' events first, to the express queue (express.ts). */
function outgoing(taken: readonly UnpublishedEvent[], window: number): Outgoing {
  const express = quietAgencyEvents(taken, window);
  return {
    events: [...taken.filter((e) => express.has(e)), ...taken.filter((e) => !express.has(e))],
    express,
  };
}

/**
 * What the last batch found: RabbitMQ confirmed all it took ('calm'); it took a full window or
 * the queue refused some ('more': events likely wait, the next batch may go at once); the queue
 * refused it whole ('full': the next waits REFUSED_RETRY_MS); or it failed ('failed': the loop
 * tries again after its back-off). Only after a calm one may the recorder open a batch (`open`).
 */
type LastBatch = 'calm' | 'more' | 'full' | 'failed';

/**
 * What the loop's next round knows without asking Postgres whether any event waits: that some do
 * ('expected': just recorded, or left by the last batch), that a batch the recorder opened read
 * the head of events_unpublished since the loop last asked ('seen': nothing to do), or nothing
 * ('ask').
 */
type NextRound = 'ask' | 'expected' | 'seen';

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
 * exchange declared with another type, 406) is replaced after a pause, as the dispatcher's are;
 * one that leaves a publish unconfirmed for publishTimeoutMs while the connection lives is replaced
 * at once (@trips/broker's ConfirmPublisher).
 *
 * The dispatcher's events queue is bounded (@trips/broker's topology.ts): when it is full,
 * RabbitMQ refuses (nacks) the publishes. Refused events stay unpublished and go again in the
 * next round, in smaller batches while the queue refuses (PublishPace). The batch is
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
 *
 * Between batches the publisher knows two things, each one state: what the last batch found
 * (LastBatch), which the loop and `open` act on, and what the loop's next round may skip (NextRound).
 */
export class Publisher {
  private readonly db: Kysely<Database>;
  private readonly events: EventsChannel;
  private readonly options: PublisherOptions;
  private readonly logger: Logger;
  private readonly pace: PublishPace;
  private last: LastBatch = 'calm';
  private next: NextRound = 'ask';
  /** This process's batch under way, the loop's or an opening's: one at a time. */
  private inFlight: Promise<void> | undefined;

  constructor(
    db: Kysely<Database>,
    connection: AmqpConnectionManager,
    options: PublisherOptions,
    logger: Logger,
  ) {
    this.db = db;
    this.options = options;
    this.logger = logger;
    this.pace = new PublishPace(options, logger);
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
    return this.last === 'full';
  }

  /** Events were just recorded: the next batch need not ask whether any wait. */
  expect(): void {
    this.next = 'expected';
  }

  /**
   * Whether events are likely still waiting after the last batch: it was full, or the queue
   * refused some. Then the next batch may go at once; otherwise it waits for the next recording.
   */
  get moreWaiting(): boolean {
    return this.last === 'more' || this.last === 'full';
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
      if (this.last !== 'failed') this.last = 'calm';
      if (this.pace.held) return 0;
      const next = this.next;
      this.next = 'ask';
      if (next === 'seen') return 0;
      if (next === 'ask' && !(await hasUnpublishedEvents(this.db))) return 0;
      return await onOneConnection(this.db, async (conn) => {
        const [, lock, head] = await runScript(conn, [
          begin,
          tryPublishLock,
          unpublishedHead(this.pace.window),
        ]);
        return this.publish(conn, lock as { ok: boolean }[], head as UnpublishedEvent[]);
      });
    } catch (error) {
      this.last = 'failed';
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
    if (this.inFlight || this.last !== 'calm' || !this.pace.calm || this.pace.held) return undefined;
    const release = this.claim();
    return {
      statements: [begin, tryPublishLock, unpublishedHeadSeqs(this.pace.window)],
      publish: async (conn, [, lock, seqs], recorded) => {
        try {
          const bySeq = new Map(recorded.map((e) => [e.seq, e]));
          const head = (seqs as { seq: number }[]).map(({ seq }) => bySeq.get(seq));
          // Rows of events recorded before this batch are not at hand: takeUnpublished reads them,
          // or, behind a backlog longer than the window (its seqs say so), walks it at once.
          const longer = head.length > this.pace.window ? 'longer' : undefined;
          const held = head.every((e) => e !== undefined) ? head : longer;
          const published = await this.publish(conn, lock as { ok: boolean }[], held);
          if (this.last !== 'calm' || published === 0) {
            this.next = 'expected';
            this.options.wake?.();
          } else if (this.next === 'ask') this.next = 'seen';
        } catch (error) {
          this.last = 'failed';
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
   * or, given none, read by takeUnpublished; behind a longer backlog, walked), publishes, forgets
   * what was confirmed, commits.
   */
  private async publish(
    conn: Kysely<Database>,
    lock: { ok: boolean }[],
    head: UnpublishedEvent[] | 'longer' | undefined,
  ): Promise<number> {
    if (!lock[0]!.ok) {
      await rollback(conn);
      this.last = 'calm';
      return 0;
    }
    const window = this.pace.window;
    const takes = [await takeUnpublished(conn, window, head)];
    // While the queue takes whole batches, a full take is followed by the next, in the same
    // transaction, taken as the last one's last events go out: the window never runs dry.
    const more = async () => {
      const last = takes.at(-1)!;
      if (!this.pace.calm || last.length < window || takes.length >= MAX_TAKES) return undefined;
      takes.push(
        await takeMoreUnpublished(
          conn,
          window,
          last.map((e) => e.seq),
        ),
      );
      return outgoing(takes.at(-1)!, window);
    };
    // A few unconfirmed at a time, stopping at the first refusal: a queue bounded by x-max-length
    // takes a whole burst while it is below its bound, so one large burst would put a whole batch
    // ahead of the next agency's event. With at most PUBLISH_IN_FLIGHT unconfirmed, the queue
    // overshoots by that many at most; more while it has not refused lately (CALM_PUBLISH_IN_FLIGHT).
    // Never more than a window, though: RECORDER_BATCH_SIZE bounds what is offered at once.
    const { confirmed, routed, refused, failure } = await this.events.send(
      outgoing(takes[0]!, window),
      Math.min(this.pace.inFlight, window),
      more,
    );
    // Failed otherwise (not confirmed in time, the channel gone): the broker is away; with
    // nothing confirmed the batch fails, to be tried again after the loop's back-off.
    if (confirmed.length === 0 && failure) throw failure;
    const full = this.pace.answered({ confirmed: confirmed.length, routed: routed.length, refused });
    const last = takes.at(-1)!;
    this.last = full ? 'full' : last.length >= window || refused > 0 ? 'more' : 'calm';
    if (this.last !== 'calm') this.next = 'expected';
    // The takes before the last were forgotten as the next was taken: those no queue took go back.
    const took = new Set(routed);
    await runScript(conn, [
      ...restoreUnpublished(takes.slice(0, -1).flatMap((t) => t.filter((e) => !took.has(e)))),
      ...markPublished(last.filter((e) => took.has(e)).map((e) => e.seq)),
      commit,
    ]);
    this.options.onPublished?.(routed);
    if (routed.length) logBatch(this.logger, routed);
    return routed.length;
  }
}

/** The batch's lines: one per event at debug, one for the batch. */
function logBatch(logger: Logger, routed: readonly UnpublishedEvent[]): void {
  for (const e of routed) logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'published');
  logger.info(
    {
      published: routed.length,
      eventIds: routed.length <= 10 ? routed.map((e) => e.id) : undefined,
      seqs: [routed[0]!.seq, routed.at(-1)!.seq],
    },
    'batch published',
  );
}
