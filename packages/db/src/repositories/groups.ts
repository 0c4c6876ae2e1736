import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, EventObjectType } from '../schema.ts';
import type { Statement } from '../script.ts';

export interface GroupKey {
  objectType: EventObjectType;
  objectId: string;
}

export interface GroupTouch extends GroupKey {
  agencyId: string;
  /** First and last change of this batch for the object (the writers' clock, from the outbox). */
  firstAt: Date;
  lastAt: Date;
}

/**
 * Opens or extends *.updated groups (interface.md 6.1): a group is due once its object has been
 * quiet for `quietMs`, and at the latest `maxMs` after the group's first change. Under
 * RECORD_LOCK, in a script (one statement for the whole batch; none for no touches).
 */
export function touchGroups(
  db: Kysely<Database> | Transaction<Database>,
  touches: readonly GroupTouch[],
  timing: { quietMs: number; maxMs: number },
): Statement[] {
  if (touches.length === 0) return [];
  const quiet = timing.quietMs / 1000;
  const max = timing.maxMs / 1000;
  return [
    sql`
    INSERT INTO event_groups AS g (object_type, object_id, agency_id, first_change_at, last_change_at, due_at)
    SELECT object_type, object_id, agency_id, first_at, last_at,
           least(last_at + make_interval(secs => ${quiet}), first_at + make_interval(secs => ${max}))
      FROM unnest(${touches.map((t) => t.objectType)}::text[], ${touches.map((t) => t.objectId)}::text[],
                  ${touches.map((t) => t.agencyId)}::text[], ${touches.map((t) => t.firstAt.toISOString())}::timestamptz[],
                  ${touches.map((t) => t.lastAt.toISOString())}::timestamptz[])
        AS u(object_type, object_id, agency_id, first_at, last_at)
    ON CONFLICT (object_type, object_id) DO UPDATE SET
      last_change_at = greatest(g.last_change_at, excluded.last_change_at),
      due_at = least(greatest(g.last_change_at, excluded.last_change_at) + make_interval(secs => ${quiet}),
                     g.first_change_at + make_interval(secs => ${max}))`.compile(db),
  ];
}

/**
 * Drops pending groups: the object was deleted, and its deletion supersedes them (D6). A script's
 * statement; none for no keys.
 */
export function dropGroups(
  db: Kysely<Database> | Transaction<Database>,
  keys: readonly GroupKey[],
): Statement[] {
  if (keys.length === 0) return [];
  return [
    sql`
    DELETE FROM event_groups g USING unnest(${keys.map((k) => k.objectType)}::text[], ${keys.map((k) => k.objectId)}::text[])
      AS u(object_type, object_id)
     WHERE g.object_type = u.object_type AND g.object_id = u.object_id`.compile(db),
  ];
}

/** Whether there is anything for the recorder to do now: cheap enough to poll often. */
export async function hasRecorderWork(db: Transaction<Database> | Kysely<Database>): Promise<boolean> {
  const result = await sql<{ work: boolean }>`
    SELECT EXISTS (SELECT 1 FROM outbox) OR EXISTS (SELECT 1 FROM event_groups WHERE due_at <= clock_timestamp()) AS work`.execute(
    db,
  );
  return result.rows[0]!.work;
}
