import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { Database, EventObjectType } from '../schema.ts';
import type { Statement } from '../script.ts';
import { queueHead, takeRoundRobin, walkRoundRobin } from './round-robin.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** An event about to be recorded; id, seq and created_at are given by the database. */
export interface NewEvent {
  agencyId: string;
  type: string;
  objectType: EventObjectType;
  objectId: string;
  data: Record<string, unknown>;
  /**
   * When the change that made it was captured in its writer's transaction (the outbox row's
   * created_at), kept until the event is published, for the lag metrics.
   */
  capturedAt: Date;
}

export interface StoredEvent {
  seq: number;
  id: string;
  agency_id: string;
  type: string;
  object_type: EventObjectType;
  object_id: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** A recorded event waiting to be published (events_unpublished), as the publisher takes it. */
export interface UnpublishedEvent extends StoredEvent {
  /**
   * When its change was captured in its writer's transaction; for a `*.updated` event, its group's
   * first change. Null for an event recorded by a version before migration 0020.
   */
  captured_at: Date | null;
}

/**
 * Records events in the order given, then one `<object>.updated` for each group now due (oldest
 * due first, at most `dueGroups`; groups.ts), each also queued for publishing with the time its
 * change was captured (for a group's event, its first change's): a script's statement, whose rows
 * are the queued events. In the same script, drop and touch the batch's groups before it, so a
 * group this batch supersedes or extends is not taken as due.
 *
 * The statement is the function record_events (migration 0017; 0020 added the capture times),
 * which keeps its plan for the session: sent as text, it was parsed and planned anew for every
 * batch. What it does: it takes (deletes) the groups due now by the database's clock, oldest due
 * first, then numbers the given events and the groups' in that order, records them in `events`,
 * queues them in `events_unpublished`, and answers the queued rows.
 *
 * The caller must hold RECORD_LOCK (advisory-locks.ts): seq values are taken only under that lock and the
 * holder commits before the next takes any, so events become visible in seq order, which is what
 * lets GET /events read `seq > cursor` without ever skipping one (decisions.md D6). The function
 * numbers its input through an ORDER BY subquery the planner does not flatten, so nextval() runs in
 * input order.
 */
export function recordEvents(events: readonly NewEvent[], options: { dueGroups: number }): Statement {
  return CompiledQuery.raw(
    'SELECT * FROM record_events($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::int)',
    [
      events.map((e) => e.agencyId),
      events.map((e) => e.type),
      events.map((e) => e.objectType),
      events.map((e) => e.objectId),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => e.capturedAt.toISOString()),
      options.dueGroups,
    ],
  );
}

const DAY_MS = 86_400_000;
const PARTITION_NAME = /^events_p(\d{4})(\d{2})(\d{2})$/;

function partitionName(dayStartMs: number): string {
  return `events_p${new Date(dayStartMs).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** Names of the existing day partitions with the start of their day (UTC, ms). */
async function listEventPartitions(db: Db): Promise<{ name: string; dayStart: number }[]> {
  const result = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'events'::regclass`.execute(db);
  return result.rows
    .map((r) => ({ name: r.name, match: PARTITION_NAME.exec(r.name) }))
    .filter((r) => r.match)
    .map((r) => ({ name: r.name, dayStart: Date.UTC(+r.match![1]!, +r.match![2]! - 1, +r.match![3]!) }))
    .sort((a, b) => a.dayStart - b.dayStart);
}

/**
 * Makes sure a partition exists for every UTC day from `from` to `daysAhead` days after it, and
 * answers the end of the last one (ms): events can be recorded until then. Call under RECORD_LOCK
 * so replicas do not race on the DDL.
 */
export async function ensureEventPartitions(trx: Db, from: Date, daysAhead: number): Promise<number> {
  const existing = new Set((await listEventPartitions(trx)).map((p) => p.dayStart));
  const first = Math.floor(from.getTime() / DAY_MS) * DAY_MS;
  for (let day = first; day <= first + daysAhead * DAY_MS; day += DAY_MS) {
    if (existing.has(day)) continue;
    const lower = new Date(day).toISOString();
    const upper = new Date(day + DAY_MS).toISOString();
    await sql
      .raw(
        `CREATE TABLE IF NOT EXISTS ${partitionName(day)} PARTITION OF events FOR VALUES FROM ('${lower}') TO ('${upper}')`,
      )
      .execute(trx);
  }
  return first + (daysAhead + 1) * DAY_MS;
}

/**
 * Retention: drops every day partition that ended before `cutoff` (now - EVENT_RETENTION). A whole
 * partition goes at once, so the cost does not grow with the number of events. Answers the names
 * dropped. GET /events filters by created_at as well, so retention is exact to the millisecond
 * for readers even while a partition still waits for its day to end.
 */
export async function dropExpiredEventPartitions(trx: Db, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  for (const p of await listEventPartitions(trx)) {
    if (p.dayStart + DAY_MS > cutoff.getTime()) continue;
    await sql.raw(`DROP TABLE IF EXISTS ${p.name}`).execute(trx);
    dropped.push(p.name);
  }
  return dropped;
}

/**
 * Unpublished events, round-robin across agencies: each agency's oldest, then the second of each,
 * and so on (rows in the order (turn within the agency, seq); the order they are published in).
 * The dispatcher's events queue is bounded, so when it is full the events wait here, and what the
 * broker takes as room frees is every agency's oldest first: one agency's bulk import no longer
 * sits in the queue ahead of everyone else.
 *
 * The walk is round-robin.ts's (the index is (agency_id, seq), migration 0015). The caller holds
 * PUBLISH_LOCK, so there is one publisher. A caller may have read the head already, in a script
 * (unpublishedHead), or know from the head's seqs (unpublishedHeadSeqs) that more than `limit`
 * events wait ('longer'): only the publisher deletes them, so they still do.
 */
export async function takeUnpublished(
  db: Db,
  limit: number,
  head?: readonly UnpublishedEvent[] | 'longer',
): Promise<UnpublishedEvent[]> {
  return takeRoundRobin<UnpublishedEvent>(db, UNPUBLISHED, limit, head);
}

const UNPUBLISHED = { table: 'events_unpublished', order: 'seq' } as const;

/**
 * A publish batch's next take, in the same transaction and round trip as forgetting the events it
 * took last (markPublished; their seqs): before RabbitMQ has confirmed them all, so the take does
 * not wait for the confirms. The batch puts back those that no queue took before it commits
 * (restoreUnpublished): a crash before the commit rolls both back, and no event is lost.
 */
export function takeMoreUnpublished(
  db: Db,
  limit: number,
  forget: readonly number[],
): Promise<UnpublishedEvent[]> {
  return walkRoundRobin<UnpublishedEvent>(db, UNPUBLISHED, limit, markPublished(forget));
}

/**
 * Puts events a batch took with takeMoreUnpublished, and so forgot early, back in
 * events_unpublished as they were: those RabbitMQ did not take. A script's statement; none for none.
 */
export function restoreUnpublished(events: readonly UnpublishedEvent[]): Statement[] {
  if (events.length === 0) return [];
  return [
    CompiledQuery.raw(
      'INSERT INTO events_unpublished SELECT * FROM jsonb_populate_recordset(NULL::events_unpublished, $1::jsonb)',
      [JSON.stringify(events)],
    ),
  ];
}

/** The oldest `limit + 1` unpublished events, for a script: pass its rows to takeUnpublished. */
export const unpublishedHead = (limit: number): Statement => queueHead(UNPUBLISHED, limit);

/**
 * The seqs of the oldest `limit + 1` unpublished events, for a script whose caller has just
 * recorded events and so may hold the head's rows already (the recorder's publish, publisher.ts):
 * the rows are then not read twice. When it does not hold them all, takeUnpublished reads them,
 * or, with more than `limit` waiting, walks the backlog at once.
 */
export const unpublishedHeadSeqs = (limit: number): Statement =>
  CompiledQuery.raw('SELECT seq FROM events_unpublished ORDER BY seq LIMIT $1', [limit + 1]);

/** Whether any event waits to be published: one indexed EXISTS, cheap enough to poll often. */
export async function hasUnpublishedEvents(db: Db): Promise<boolean> {
  const pending = await sql<{
    any: boolean;
  }>`SELECT EXISTS (SELECT 1 FROM events_unpublished) AS any`.execute(db);
  return pending.rows[0]!.any;
}

/** Forgets events RabbitMQ has confirmed: a script's statement; none for no events. */
export function markPublished(seqs: readonly number[]): Statement[] {
  if (seqs.length === 0) return [];
  return [CompiledQuery.raw('DELETE FROM events_unpublished WHERE seq = ANY($1::bigint[])', [seqs])];
}

interface EventPage {
  events: StoredEvent[];
  /** The largest seq visible to this statement over all agencies: "where you are now". */
  visibleSeq: number;
  /** The database's clock when the page was read. */
  now: Date;
}

/**
 * One page of an agency's events with seq > afterSeq, oldest first, plus the position a reader can
 * resume from when it has seen everything. One statement, so both come from one snapshot: every
 * event with seq <= visibleSeq is already committed (see insertEvents), so nothing the reader is
 * allowed to see can appear later behind that position.
 */
export async function readEventPage(
  db: Db,
  input: { agencyId: string; afterSeq: number; types: string[]; limit: number; retentionMs: number },
): Promise<EventPage> {
  const result = await sql<{ page: StoredEvent[] | null; visible_seq: string | null; now: Date }>`
    WITH page AS (
      SELECT seq, id, agency_id, type, object_type, object_id, data, created_at FROM events
       WHERE agency_id = ${input.agencyId} AND seq > ${input.afterSeq}
         AND type = ANY(${input.types}::text[])
         AND created_at > now() - make_interval(secs => ${input.retentionMs / 1000})
       ORDER BY seq LIMIT ${input.limit}
    )
    SELECT (SELECT json_agg(page ORDER BY seq) FROM page) AS page,
           (SELECT max(seq) FROM events) AS visible_seq,
           now() AS now`.execute(db);
  const row = result.rows[0]!;
  const events = (row.page ?? []).map((e) => ({
    ...e,
    seq: Number(e.seq),
    created_at: new Date(e.created_at),
  }));
  return {
    events,
    visibleSeq: Math.max(Number(row.visible_seq ?? 0), input.afterSeq),
    now: new Date(row.now),
  };
}

/**
 * A page of an agency's recorded events of some types since a time, in recording order (seq), for
 * redelivering them to one webhook. Keyset paging by seq: pass the last seq of a page as `afterSeq`.
 */
export async function eventsForRedelivery(
  db: Db,
  input: { agencyId: string; since: Date; types: readonly string[]; afterSeq?: number; limit?: number },
) {
  return db
    .selectFrom('events')
    .select(['seq', 'id', 'type', 'object_type', 'object_id', 'data', 'created_at'])
    .where('agency_id', '=', input.agencyId)
    .where('created_at', '>=', input.since)
    .where('type', '=', sql<string>`ANY(${[...input.types]}::text[])`)
    .where('seq', '>', input.afterSeq ?? 0)
    .orderBy('seq')
    .limit(input.limit ?? 500)
    .execute();
}

/** How many events eventsForRedelivery will answer in all, for a progress bar. */
export async function countEventsForRedelivery(
  db: Db,
  input: { agencyId: string; since: Date; types: readonly string[] },
): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('agency_id', '=', input.agencyId)
    .where('created_at', '>=', input.since)
    .where('type', '=', sql<string>`ANY(${[...input.types]}::text[])`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * One of the agency's recorded events by id, recorded no later than `notAfter` and within
 * `retentionMs` of it: events are partitioned by time and have no index on id, so the time range
 * keeps the search to the partitions that can hold it. For the delivery log's detail and for
 * sending one event again, not for a hot path.
 */
export async function findRecordedEvent(
  db: Db,
  input: { agencyId: string; id: string; notAfter: Date; retentionMs: number },
) {
  return db
    .selectFrom('events')
    .select(['seq', 'id', 'type', 'object_type', 'object_id', 'data', 'created_at'])
    .where('agency_id', '=', input.agencyId)
    .where('id', '=', input.id)
    .where('created_at', '<=', input.notAfter)
    .where('created_at', '>', new Date(input.notAfter.getTime() - input.retentionMs))
    .executeTakeFirst();
}
