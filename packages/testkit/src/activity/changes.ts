// What an activity answers: each committed change and the events it must make, written from
// interface.md section 6 (with D5/D6) so a test can hold the recorder to it.

export type ActivityObjectType = 'trip' | 'payment' | 'contact';

export interface ObjectRef {
  type: ActivityObjectType;
  id: string;
}

/** An event a change must make at once (the non-grouped types). */
export interface ExpectedEvent {
  type: string;
  objectId: string;
  data: Record<string, unknown>;
}

/** One committed change and what it must lead to. */
export interface CommittedChange {
  agencyId: string;
  /** What the planner did, e.g. `trip.accept`, `payment.pay`, `template.convert`. */
  action: string;
  /** When it was written, on the database's clock: grouping measures quiet periods by it. */
  at: Date;
  /** Events it must make at once, in no particular order. */
  events: ExpectedEvent[];
  /** Objects it changed in a way that opens or extends their `*.updated` group. */
  touched: ObjectRef[];
  /** Objects it deleted (for the API): their pending `*.updated` group is dropped (D6). */
  deleted: ObjectRef[];
}
