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

export function createActivity(db: Kysely<Database>, options: ActivityOptions): Activity {
  const { agencyId } = options;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const planner = createPlanner(createContext(agencyId, seed), options.focus ?? 0.6);
  const committed: CommittedChange[] = [];
  let inDoubt: { xid: string; write: Write; outcome: Outcome; at: Date } | undefined;

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
    const { xid, write, outcome, at } = inDoubt;
    const { rows } = await sql<{
      status: string | null;
    }>`SELECT txid_status(${xid}::bigint) AS status`.execute(db);
    const status = rows[0]?.status;
    if (status === 'in progress') throw new Error('activity: the change in doubt is still in progress');
    inDoubt = undefined;
    if (status === 'committed') record(write, outcome, at);
    else if (status !== 'aborted') throw new Error(`activity: cannot tell whether ${write.action} committed`);
  }

  async function step(): Promise<CommittedChange> {
    await settle();
    const write = planner.pick();
    // Filled in once everything is written: if only the COMMIT then goes unanswered, the change
    // may or may not have happened, and settle() finds out which.
    const pending: { xid?: string; outcome?: Outcome; at?: Date } = {};
    try {
      await db.transaction().execute(async (trx) => {
        const { xid } = await one(trx, sql<{ xid: string }>`SELECT txid_current()::text AS xid`);
        const outcome = await write.run(trx);
        const { at } = await one(trx, sql<{ at: Date }>`SELECT clock_timestamp() AS at`);
        Object.assign(pending, { xid, outcome, at: new Date(at) });
      });
    } catch (error) {
      if (pending.outcome) inDoubt = { xid: pending.xid!, write, outcome: pending.outcome, at: pending.at! };
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
