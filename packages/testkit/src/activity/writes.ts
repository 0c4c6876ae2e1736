import type { RawBuilder, Transaction } from 'kysely';
import type { Database } from '@trips/db';
import type { ActivityObjectType, ExpectedEvent, ObjectRef } from './changes.ts';

/** What one chosen change does: write it, then say what it made and update the model. */
export interface Write {
  action: string;
  run(trx: Transaction<Database>): Promise<Outcome>;
}

export interface Outcome {
  events: ExpectedEvent[];
  touched: ObjectRef[];
  deleted: ObjectRef[];
  /** Applied to the model only once the change is known to be committed. */
  apply(): void;
}

export interface Choice {
  /** The event types this kind of change can make; kinds that make one not seen yet come first. */
  makes: string[];
  weight: number;
  /** A change of this kind that fits the agency now, or undefined when none does. */
  pick(): Write | undefined;
}

export const event = (type: string, objectId: string, data: Record<string, unknown> = {}): ExpectedEvent => ({
  type,
  objectId,
  data,
});
export const ref = (type: ActivityObjectType, id: string): ObjectRef => ({ type, id });
export const none = (apply: () => void = () => {}): Outcome => ({
  events: [],
  touched: [],
  deleted: [],
  apply,
});

export async function one<T>(trx: Transaction<Database>, query: RawBuilder<T>): Promise<T> {
  const { rows } = await query.execute(trx);
  return rows[0]!;
}

/** Writes an edit and answers how to apply it to the model. */
export type Edit = (trx: Transaction<Database>) => Promise<() => void>;

/** An edit that makes no event at once but opens or extends the object's `*.updated` group. */
export const touching = (type: ActivityObjectType, id: string, action: string, run: Edit): Write => ({
  action,
  run: async (trx) => {
    const apply = await run(trx);
    return { events: [], touched: [ref(type, id)], deleted: [], apply };
  },
});
