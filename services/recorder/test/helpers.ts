import { sql, type Kysely } from 'kysely';
import pino from 'pino';
import type { Database } from '@trips/db';
import { Recorder, type RecorderOptions } from '../src/recorder.ts';

export const silent = pino({ level: 'silent' });

/** A recorder driven by hand (no loops, no broker): tests call drain() where the loop would run. */
export function handRecorder(db: Kysely<Database>, options: Partial<RecorderOptions> = {}): Recorder {
  return new Recorder(
    db,
    { batchSize: 1000, groupQuietMs: 1, groupMaxMs: 1, retentionMs: 30 * 86_400_000, ...options },
    silent,
  );
}

/** Runs batches until the outbox is empty and no group is due. */
export async function drain(recorder: Recorder): Promise<void> {
  for (;;) {
    const { changes, events } = await recorder.runBatch();
    if (changes === 0 && events.length === 0) return;
  }
}

export interface SeenEvent {
  type: string;
  object: string;
  data: Record<string, unknown>;
}

export async function eventsAfter(db: Kysely<Database>, seq: number): Promise<SeenEvent[]> {
  const rows = await db
    .selectFrom('events')
    .select(['type', 'object_type', 'object_id', 'data'])
    .where('seq', '>', seq)
    .orderBy('seq')
    .execute();
  return rows.map((r) => ({ type: r.type, object: `${r.object_type}:${r.object_id}`, data: r.data }));
}

export async function maxSeq(db: Kysely<Database>): Promise<number> {
  const r = await sql<{ m: number | null }>`SELECT max(seq)::int AS m FROM events`.execute(db);
  return r.rows[0]!.m ?? 0;
}

/**
 * Runs plain SQL as the host application would. Several statements in one call run as one
 * transaction (the simple query protocol's implicit transaction).
 */
export async function hostWrite(db: Kysely<Database>, statements: string): Promise<void> {
  await sql.raw(statements).execute(db);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
