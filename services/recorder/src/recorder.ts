import type { Kysely, Transaction } from 'kysely';
import type { Database } from '@trips/db';
import { recordLock, takeRecordLock } from '@trips/db/advisory-locks';
import {
  dropExpiredEventPartitions,
  ensureEventPartitions,
  recordEvents,
  type NewEvent,
  type UnpublishedEvent,
} from '@trips/db/events';
import { dropGroups, hasRecorderWork, touchGroups, type GroupKey, type GroupTouch } from '@trips/db/groups';
import { claimOutbox, deleteOutbox, outboxHead, outboxWalk, WALK_ROWS } from '@trips/db/outbox';
import { begin, commit, onOneConnection, runScript } from '@trips/db/script';
import type { OutboxRow } from '@trips/db';
import type { Logger } from '@trips/runtime';
import { changeOf, classify, type Effect } from './catalogue.ts';
import type { PublishOpening } from './publisher.ts';

export interface RecorderOptions {
  batchSize: number;
  groupQuietMs: number;
  groupMaxMs: number;
  retentionMs: number;
}

export interface BatchResult {
  changes: number;
  /** The changes taken (their created_at is when each was captured: metrics.ts). */
  captured: readonly OutboxRow[];
  /** As events_unpublished keeps them, with their capture times. */
  events: UnpublishedEvent[];
  /** The batch took as many changes, or due groups, as it may: more are likely waiting. */
  full: boolean;
  /** Its events are being published on its connection, by a batch it opened (PublishOpening). */
  publishing: boolean;
}

const idle = (): BatchResult => ({ changes: 0, captured: [], events: [], full: false, publishing: false });

/** A batch's effects reduced to three writes: events now, groups dropped, groups opened/extended. */
export function planBatch(effects: Effect[]): {
  events: NewEvent[];
  drops: GroupKey[];
  touches: GroupTouch[];
} {
  const events: NewEvent[] = [];
  // Per object, in change order: a deletion wipes what came before it; a change after it opens anew.
  const groups = new Map<string, { drop: boolean; touch?: GroupTouch }>();
  for (const effect of effects) {
    if (effect.kind === 'emit') {
      const { type, agencyId, objectType, objectId, data, at } = effect;
      events.push({ type, agencyId, objectType, objectId, data, capturedAt: at });
      continue;
    }
    const key = `${effect.objectType}:${effect.objectId}`;
    const entry = groups.get(key) ?? { drop: false };
    if (effect.kind === 'drop') {
      groups.set(key, { drop: true });
    } else {
      const { agencyId, objectType, objectId, at } = effect;
      entry.touch = entry.touch
        ? { ...entry.touch, lastAt: at > entry.touch.lastAt ? at : entry.touch.lastAt }
        : { agencyId, objectType, objectId, firstAt: at, lastAt: at };
      groups.set(key, entry);
    }
  }
  const drops: GroupKey[] = [];
  const touches: GroupTouch[] = [];
  for (const [key, entry] of groups) {
    const [objectType, ...rest] = key.split(':');
    if (entry.drop)
      drops.push({ objectType: objectType as GroupKey['objectType'], objectId: rest.join(':') });
    if (entry.touch) touches.push(entry.touch);
  }
  return { events, drops, touches };
}

const HOUR_MS = 3_600_000;

/**
 * Turns outbox rows into events. Every batch is one transaction under RECORD_LOCK, so replicas take
 * turns and never duplicate, lose or reorder: claim changes, classify them, drop/open/extend
 * groups, record the events of this instant and of the groups now due, delete the claimed changes,
 * commit. Events of one batch are visible together, after every earlier batch's (seq order).
 *
 * A batch is two round trips to Postgres, each a script (@trips/db/script): one opens the
 * transaction, takes the lock and reads the outbox's head; the other writes everything and
 * commits. Round trips were most of what a batch cost, so the
 * second one also opens the publisher's batch for the events it records, when the publisher is
 * free to take one (Publisher.open): that batch goes on, on the same connection, after runBatch
 * has answered, and the recorder's next batch does not wait for RabbitMQ's confirms.
 */
export class Recorder {
  private readonly db: Kysely<Database>;
  private readonly options: RecorderOptions;
  private readonly logger: Logger;
  /** Events can be recorded until this instant without creating a partition (ms). */
  private partitionsUntil = 0;
  /**
   * The last batch found work: the next one goes straight to its transaction. After an idle one it
   * asks first whether there is any (one cheap EXISTS), so an idle recorder opens no transactions.
   */
  private busy = false;
  /**
   * The last batch was full: a backlog likely waits, so the next claims it in its first round trip
   * by the walk, rather than reading the outbox's head to find it longer than a batch and walking
   * in a round trip more.
   */
  private backlog = false;

  constructor(db: Kysely<Database>, options: RecorderOptions, logger: Logger) {
    this.db = db;
    this.options = options;
    this.logger = logger;
  }

  /**
   * One batch; answers what it did. `open`, when given, is asked for a publish batch to follow the
   * commit (Publisher.open); a failure of that batch after the commit is the publisher's to report.
   */
  async runBatch(open?: () => PublishOpening | undefined): Promise<BatchResult> {
    if (!this.busy && !(await hasRecorderWork(this.db))) return idle();
    if (Date.now() + HOUR_MS > this.partitionsUntil) await this.ensurePartitions();
    const result = await new Promise<BatchResult>((resolve, reject) => {
      let recorded = false;
      onOneConnection(this.db, async (conn) => {
        const { batch, publish } = await this.record(conn, open);
        recorded = true;
        resolve(batch);
        await publish?.(conn);
      }).catch((error: unknown) => {
        if (!recorded) reject(error);
      });
    });
    this.busy = result.changes > 0 || result.events.length > 0;
    this.backlog = result.full;
    if (this.busy) this.logBatch(result);
    return result;
  }

  private async record(
    conn: Kysely<Database>,
    open: (() => PublishOpening | undefined) | undefined,
  ): Promise<{ batch: BatchResult; publish?: (conn: Kysely<Database>) => Promise<void> }> {
    const { batchSize, groupQuietMs, groupMaxMs } = this.options;
    const rows = await this.claim(conn, batchSize);
    const plan = planBatch(rows.flatMap((row) => classify(changeOf(row))));
    const before = [
      ...dropGroups(conn, plan.drops),
      ...touchGroups(conn, plan.touches, { quietMs: groupQuietMs, maxMs: groupMaxMs }),
    ];
    // Only for events of this instant: a batch that finds none (groups due, if any) goes on as before.
    const opening = plan.events.length > 0 ? open?.() : undefined;
    const following = opening?.statements ?? [];
    let results: unknown[][];
    try {
      results = await runScript(conn, [
        ...before,
        recordEvents(plan.events, { dueGroups: batchSize }),
        ...deleteOutbox(rows.map((r) => r.id)),
        commit,
        ...following,
      ]);
    } catch (error) {
      opening?.cancel();
      throw error;
    }
    const events = (results[before.length] as UnpublishedEvent[]).sort((a, b) => a.seq - b.seq);
    const due = events.length - plan.events.length;
    const batch = {
      changes: rows.length,
      captured: rows,
      events,
      full: rows.length >= batchSize || due >= batchSize,
      publishing: opening !== undefined,
    };
    const opened = results.slice(results.length - following.length);
    return { batch, publish: opening && ((c) => opening.publish(c, opened, events)) };
  }

  /** Opens the batch's transaction, takes RECORD_LOCK and claims the changes: one round trip, or two behind a backlog whose head was read. */
  private async claim(conn: Kysely<Database>, batchSize: number): Promise<OutboxRow[]> {
    if (this.backlog) {
      const results = await runScript(conn, [begin, recordLock, ...outboxWalk(conn, batchSize)]);
      return results[2 + WALK_ROWS] as OutboxRow[];
    }
    const [, , head] = await runScript(conn, [begin, recordLock, outboxHead(batchSize)]);
    return claimOutbox(conn, batchSize, head as OutboxRow[]);
  }

  private logBatch({ changes, events }: BatchResult): void {
    for (const e of events) this.logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'recorded');
    this.logger.info(
      {
        changes,
        events: events.length,
        eventIds: events.length <= 10 ? events.map((e) => e.id) : undefined,
        seqs: events.length ? [events[0]!.seq, events.at(-1)!.seq] : undefined,
      },
      'batch recorded',
    );
  }

  /** Creates the partitions the next hours' events go to, before a batch needs them. */
  private async ensurePartitions(): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await takeRecordLock(trx);
      await this.partitionsAhead(trx, new Date());
    });
  }

  /** Under RECORD_LOCK: partitions from an hour before `now` to two days on, and how far they go. */
  private async partitionsAhead(trx: Transaction<Database>, now: Date): Promise<void> {
    this.partitionsUntil = await ensureEventPartitions(trx, new Date(now.getTime() - HOUR_MS), 2);
  }

  /** Creates tomorrow's partitions and drops the expired ones; serialized with batches by RECORD_LOCK. */
  async maintain(now = new Date()): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      await takeRecordLock(trx);
      await this.partitionsAhead(trx, now);
      const dropped = await dropExpiredEventPartitions(
        trx,
        new Date(now.getTime() - this.options.retentionMs),
      );
      if (dropped.length) this.logger.info({ dropped }, 'expired event partitions dropped');
      return dropped;
    });
  }
}
