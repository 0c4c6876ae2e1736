import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from '@trips/db';
import type { CommittedChange } from './activity/changes.ts';
import { createContext } from './activity/context.ts';
import { createPlanner } from './activity/planner.ts';
import { one, type Outcome, type Write } from './activity/writes.ts';

// A golf travel agency at work, as the host application writes it: plain SQL on the write contract
// (docs/schema.md), one transaction per change. It keeps its own model of what it wrote, and for
// each committed change says which events interface.md section 6 (with D5/D6) requires, written
// out here by hand rather than taken from the recorder's catalogue, so a test can hold the
// recorder to it. Used by the system test; meant for a demo simulator too.
//
// The parts, in activity/: the model of what the agency has (model.ts), the seeded dice
// (dice.ts), one module per kind of object saying which changes it takes and what each must make
// (trips.ts, trip-edits.ts, templates.ts, payments.ts, contacts.ts), and the planner that picks
// the next change among them (planner.ts). This file runs each change in a transaction and keeps
// the record of what committed.

export type { CommittedChange, ExpectedEvent, ObjectRef } from './activity/changes.ts';

export interface ActivityOptions {
  agencyId: string;
  /** Seeds the choices, so a run can be repeated; random unless given. */
  seed?: number;
  /**
   * How likely the next step edits the object the last edit touched again, as a planner working
   * on one trip does. Steps at a pace well inside EVENT_GROUP_QUIET make such runs group.
   */
  focus?: number;
}

export interface Activity {
  readonly agencyId: string;
  readonly seed: number;
  /** Every change committed so far, in commit order. */
  readonly committed: readonly CommittedChange[];
  /**
   * Makes one random, realistic change in its own transaction and answers it. Throws when the
   * write fails (nothing was committed then, or the outcome is settled by the next call).
   */
  step(): Promise<CommittedChange>;
  /**
   * Settles a change whose COMMIT got no answer (the connection dropped): asks Postgres whether
   * its transaction committed and records it if so. step() calls it first; call it before reading
   * `committed` after a database outage. Throws while the database is unreachable.
   */
  settle(): Promise<void>;
}

/**
 * The table of the marks each change writes in its own transaction, so a change whose COMMIT went
 * unanswered can be told committed or not. No trigger captures it: it makes no events. Made once,
 * under a lock, as several activities share a database.
 */
async function createMarks(db: Kysely<Database>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext('activity_commits'))`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS activity_commits (token uuid PRIMARY KEY)`.execute(trx);
  });
}

export function createActivity(db: Kysely<Database>, options: ActivityOptions): Activity {
  const { agencyId } = options;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const planner = createPlanner(createContext(agencyId, seed), options.focus ?? 0.6);
  const committed: CommittedChange[] = [];
  let inDoubt: { xid: string; token: string; write: Write; outcome: Outcome; at: Date } | undefined;
  let marksReady: Promise<void> | undefined;

  function record(write: Write, outcome: Outcome, at: Date): CommittedChange {
    outcome.apply();
    const change: CommittedChange = {
      agencyId,
      action: write.action,
      at,
      events: outcome.events,
      touched: outcome.touched,
      deleted: outcome.deleted,
    };
    committed.push(change);
    planner.committed(outcome);
    return change;
  }

  async function settle(): Promise<void> {
    if (!inDoubt) return;
    const { xid, token, write, outcome, at } = inDoubt;
    // The change's own mark tells whether it committed. Its transaction id cannot, after a failover:
    // a primary promoted before the change's WAL reached it hands out that id again, and
    // txid_status then answers for its own transaction (a change recorded as committed that the
    // new primary never had). Only "still running" is read from it, to wait and ask again.
    const { rows } = await sql<{ marked: boolean; status: string | null }>`
      SELECT EXISTS (SELECT 1 FROM activity_commits WHERE token = ${token}::uuid) AS marked,
             txid_status(${xid}::bigint) AS status`.execute(db);
    const { marked, status } = rows[0]!;
    if (!marked && status === 'in progress')
      throw new Error('activity: the change in doubt may still be in progress');
    inDoubt = undefined;
    if (marked) record(write, outcome, at);
  }

  async function step(): Promise<CommittedChange> {
    marksReady ??= createMarks(db).catch((error: unknown) => {
      marksReady = undefined;
      throw error;
    });
    await marksReady;
    await settle();
    const write = planner.pick();
    // Filled in once everything is written: if only the COMMIT then goes unanswered, the change
    // may or may not have happened, and settle() finds out which from the mark it wrote.
    const token = randomUUID();
    const pending: { xid?: string; outcome?: Outcome; at?: Date } = {};
    try {
      await db.transaction().execute(async (trx) => {
        const { xid } = await one(trx, sql<{ xid: string }>`SELECT txid_current()::text AS xid`);
        const outcome = await write.run(trx);
        await sql`INSERT INTO activity_commits (token) VALUES (${token}::uuid)`.execute(trx);
        const { at } = await one(trx, sql<{ at: Date }>`SELECT clock_timestamp() AS at`);
        Object.assign(pending, { xid, outcome, at: new Date(at) });
      });
    } catch (error) {
      if (pending.outcome)
        inDoubt = { xid: pending.xid!, token, write, outcome: pending.outcome, at: pending.at! };
      throw error;
    }
    return record(write, pending.outcome!, pending.at!);
  }

  return {
    agencyId,
    seed,
    committed,
    step,
    settle,
  };
}
