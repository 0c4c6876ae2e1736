import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { takeRecordLock } from '@trips/db/advisory-locks';
import {
  dropExpiredEventPartitions,
  ensureEventPartitions,
  insertEvents,
  type NewEvent,
  type StoredEvent,
} from '@trips/db/events';
import {
  dropGroups,
  hasRecorderWork,
  takeDueGroups,
  touchGroups,
  type GroupKey,
  type GroupTouch,
} from '@trips/db/groups';
import { claimOutbox, deleteOutbox } from '@trips/db/outbox';
import type { Logger } from '@trips/runtime';
import { changeOf, classify, type Effect } from './catalogue.ts';

export interface RecorderOptions {
  batchSize: number;
  groupQuietMs: number;
  groupMaxMs: number;
  retentionMs: number;
}

export interface BatchResult {
  changes: number;
  events: StoredEvent[];
}

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
      const { type, agencyId, objectType, objectId, data } = effect;
      events.push({ type, agencyId, objectType, objectId, data });
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
 * turns and never duplicate, lose or reorder: claim changes, classify them, record the events of
 * this instant, open/extend/drop groups, record the groups now due, delete the claimed changes,
 * commit. Events of one batch are visible together, after every earlier batch's (seq order).
 */
export class Recorder {
  private readonly db: Kysely<Database>;
  private readonly options: RecorderOptions;
  private readonly logger: Logger;
  /** Events can be recorded until this instant without creating a partition (ms). */
  private partitionsUntil = 0;

  constructor(db: Kysely<Database>, options: RecorderOptions, logger: Logger) {
    this.db = db;
    this.options = options;
    this.logger = logger;
  }

  /** One batch; answers what it did. Cheap when idle: one indexed EXISTS, no transaction. */
  async runBatch(): Promise<BatchResult> {
    if (!(await hasRecorderWork(this.db))) return { changes: 0, events: [] };
    const { batchSize, groupQuietMs, groupMaxMs } = this.options;
    const result = await this.db.transaction().execute(async (trx) => {
      await takeRecordLock(trx);
      if (Date.now() + HOUR_MS > this.partitionsUntil) {
        this.partitionsUntil = await ensureEventPartitions(trx, new Date(Date.now() - HOUR_MS), 2);
      }
      const rows = await claimOutbox(trx, batchSize);
      const plan = planBatch(rows.flatMap((row) => classify(changeOf(row))));
      await dropGroups(trx, plan.drops);
      await touchGroups(trx, plan.touches, { quietMs: groupQuietMs, maxMs: groupMaxMs });
      const due = await takeDueGroups(trx, batchSize);
      const events = await insertEvents(trx, [
        ...plan.events,
        ...due.map((g) => ({ ...g, type: `${g.objectType}.updated`, data: {} })),
      ]);
      await deleteOutbox(
        trx,
        rows.map((r) => r.id),
      );
      return { changes: rows.length, events };
    });
    if (result.changes > 0 || result.events.length > 0) {
      for (const e of result.events)
        this.logger.debug({ eventId: e.id, seq: e.seq, type: e.type }, 'recorded');
      this.logger.info(
        {
          changes: result.changes,
          events: result.events.length,
          eventIds: result.events.length <= 10 ? result.events.map((e) => e.id) : undefined,
          seqs: result.events.length ? [result.events[0]!.seq, result.events.at(-1)!.seq] : undefined,
        },
        'batch recorded',
      );
    }
    return result;
  }

  /** Creates tomorrow's partitions and drops the expired ones; serialized with batches by RECORD_LOCK. */
  async maintain(now = new Date()): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      await takeRecordLock(trx);
      this.partitionsUntil = await ensureEventPartitions(trx, new Date(now.getTime() - HOUR_MS), 2);
      const dropped = await dropExpiredEventPartitions(
        trx,
        new Date(now.getTime() - this.options.retentionMs),
      );
      if (dropped.length) this.logger.info({ dropped }, 'expired event partitions dropped');
      return dropped;
    });
  }
}
