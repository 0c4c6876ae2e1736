import { sql, type Kysely } from 'kysely';
import pino from 'pino';
import type { Database } from '@trips/db';
import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { Recorder, type RecorderOptions } from '../src/recorder.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';

export const silent = pino({ level: 'silent' });

export interface TestRecorder {
  t: TestDatabase;
  /** What the recorder publishes: a queue bound to its exchanges, as the dispatcher's is. */
  queue: TestQueue;
  service: RecorderService;
  /** Stops the service and removes the database, the queue and the exchanges. */
  cleanup(): Promise<void>;
}

/** The recorder service on a fresh database and AMQP prefix, with the test's settings on top. */
export async function startTestRecorder(env: Record<string, string> = {}): Promise<TestRecorder> {
  const t = await createTestDatabase();
  const prefix = randomAmqpPrefix();
  // Bound before the recorder starts: unroutable events would stay unpublished.
  const queue = await collectEvents(prefix);
  const service = await startRecorderService(
    readConfig({
      DATABASE_URL: t.url,
      AMQP_URL: amqpUrl,
      AMQP_PREFIX: prefix,
      RECORDER_HEALTH_PORT: '0',
      ...env,
    }),
    silent,
  );
  return {
    t,
    queue,
    service,
    cleanup: async () => {
      await service.stop();
      await queue.close();
      await deleteAmqpObjects({ exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`] });
      await t.drop();
    },
  };
}

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
