import { EVENT_TYPES, type EventType } from '@trips/contracts';
import type { EventObjectType, OutboxRow, OutboxSource } from '@trips/db';

// Which event a captured change makes: interface.md section 6 and decisions.md D5/D6 as one table.
// Each row reads "<type> is made from a change of <table> when <condition>, about <object>".
// Whether a type is made at once or grouped comes from the contracts' catalogue (EVENT_TYPES), so
// the two cannot disagree. One change can match several rows and so make several events (D6).

type Row = Record<string, unknown>;

/** A captured change as the rules see it: the row before and after (null when absent). */
export interface Change {
  source: OutboxSource;
  agencyId: string;
  before: Row | null;
  after: Row | null;
  /** When the writer made the change; grouping measures from it. */
  at: Date;
}

/** What the recorder does for one matched row. */
export type Effect =
  | {
      kind: 'emit';
      type: EventType;
      agencyId: string;
      objectType: EventObjectType;
      objectId: string;
      data: Row;
      /** When the change was captured in its writer's transaction; kept with the event (metrics). */
      at: Date;
    }
  | { kind: 'group'; agencyId: string; objectType: EventObjectType; objectId: string; at: Date }
  | { kind: 'drop'; objectType: EventObjectType; objectId: string };

// --- What the client (and so the API) can see of each side of a change --------------------------

/** A trip exists for events when it is not a template (D5). */
const trip = (row: Row | null) => row !== null && row.is_template === false;
/** An itinerary, option or trip link counts when its trip is not a template. */
const ofTrip = (row: Row | null) => row !== null && row.trip_is_template !== true;
/** A payment is visible once shown, until cancelled (D5: drafts and cancelled ones are 404). */
const payment = (row: Row | null) =>
  row !== null && row.visibility === 'shown' && row.cancelled_at == null && row.trip_is_template !== true;
const contact = (row: Row | null) => row !== null;

type Visible = (row: Row | null) => boolean;
const appeared = (v: Visible) => (c: Change) => !v(c.before) && v(c.after);
const vanished = (v: Visible) => (c: Change) => v(c.before) && !v(c.after);
const stayed = (v: Visible) => (c: Change) => v(c.before) && v(c.after);
const changed = (c: Change, ...columns: string[]) =>
  columns.some((k) => JSON.stringify(c.before?.[k]) !== JSON.stringify(c.after?.[k]));
const wasSet = (c: Change, column: string) => c.before?.[column] != null;
const becameSet = (c: Change, column: string) => c.before?.[column] == null && c.after?.[column] != null;

/** Trip columns whose change is "anything else about the trip" (title, dates, travellers, page texts). */
const TRIP_CONTENT = [
  'title',
  'region',
  'base_camp',
  'start_date',
  'end_date',
  'num_days',
  'golfers',
  'client_page_headline',
  'client_page_message',
];
/** What the D5 payment record shows, apart from what has its own event. */
const PAYMENT_CONTENT = ['trip_id', 'description', 'amount', 'currency', 'due_date'];
const CONTACT_CONTENT = ['first_name', 'last_name', 'email', 'phone'];

// --- Which object an event is about ------------------------------------------------------------

const self = (c: Change) => [String((c.after ?? c.before)!.id)];
/** The trips a part belongs to, before and after (an option can move to another trip). */
const parentTrips = (c: Change) => sidesOf(c, ofTrip, 'trip_id');
const linkedContacts = (c: Change) => sidesOf(c, ofTrip, 'contact_id');
function sidesOf(c: Change, v: Visible, column: string): string[] {
  const ids = [c.before, c.after].filter((row) => v(row)).map((row) => String(row![column]));
  return [...new Set(ids)];
}

export interface Rule {
  type: EventType;
  from: OutboxSource;
  when: (c: Change) => boolean;
  /** The ids of the objects the event is about; the changed row itself unless said otherwise. */
  about?: (c: Change) => string[];
  data?: (c: Change) => Row;
  /** A deletion drops the object's pending *.updated group (D6). */
  supersedesGroup?: true;
}

export const CATALOGUE: readonly Rule[] = [
  // Trips
  { type: 'trip.created', from: 'trips', when: appeared(trip) },
  {
    type: 'trip.status_changed',
    from: 'trips',
    when: (c) => stayed(trip)(c) && changed(c, 'status'),
    data: (c) => ({ from: c.before!.status, to: c.after!.status }),
  },
  { type: 'trip.accepted', from: 'trips', when: (c) => stayed(trip)(c) && becameSet(c, 'accepted_at') },
  {
    type: 'trip.published',
    from: 'trips',
    when: (c) => stayed(trip)(c) && !c.before!.client_page_published && !!c.after!.client_page_published,
  },
  {
    type: 'trip.unpublished',
    from: 'trips',
    when: (c) => stayed(trip)(c) && !!c.before!.client_page_published && !c.after!.client_page_published,
  },
  {
    type: 'trip.updated',
    from: 'trips',
    when: (c) =>
      stayed(trip)(c) &&
      (changed(c, ...TRIP_CONTENT) ||
        // A live page moved to another address; the page going live or away has its own event.
        (!!c.before!.client_page_published &&
          !!c.after!.client_page_published &&
          changed(c, 'client_page_url')) ||
        // Acceptance withdrawn or re-dated; the first acceptance has its own event.
        (wasSet(c, 'accepted_at') && changed(c, 'accepted_at'))),
  },
  { type: 'trip.updated', from: 'itineraries', when: () => true, about: parentTrips },
  { type: 'trip.updated', from: 'trip_options', when: () => true, about: parentTrips },
  { type: 'trip.deleted', from: 'trips', when: vanished(trip), supersedesGroup: true },

  // Payments: drafts and cancelled ones make none
  { type: 'payment.created', from: 'payments', when: appeared(payment) },
  { type: 'payment.paid', from: 'payments', when: (c) => stayed(payment)(c) && becameSet(c, 'paid_at') },
  {
    type: 'payment.updated',
    from: 'payments',
    when: (c) =>
      stayed(payment)(c) &&
      (changed(c, ...PAYMENT_CONTENT) ||
        // Paid back to open, or re-dated; being paid in full has its own event.
        (wasSet(c, 'paid_at') && changed(c, 'paid_at')) ||
        // A part payment changes what the client's page shows; the final one is payment.paid.
        (changed(c, 'amount_paid') && !becameSet(c, 'paid_at'))),
  },
  { type: 'payment.deleted', from: 'payments', when: vanished(payment), supersedesGroup: true },

  // Contacts
  { type: 'contact.created', from: 'contacts', when: appeared(contact) },
  {
    type: 'contact.updated',
    from: 'contacts',
    when: (c) => stayed(contact)(c) && changed(c, ...CONTACT_CONTENT),
  },
  { type: 'contact.updated', from: 'trip_contacts', when: () => true, about: linkedContacts },
  { type: 'contact.deleted', from: 'contacts', when: vanished(contact), supersedesGroup: true },
];

const BY_SOURCE = new Map<OutboxSource, Rule[]>();
for (const rule of CATALOGUE) BY_SOURCE.set(rule.from, [...(BY_SOURCE.get(rule.from) ?? []), rule]);

export function changeOf(row: OutboxRow): Change {
  return { source: row.source, agencyId: row.agency_id, before: row.old, after: row.new, at: row.created_at };
}

/** Every effect of one change, in catalogue order. */
export function classify(change: Change): Effect[] {
  const effects: Effect[] = [];
  for (const rule of BY_SOURCE.get(change.source) ?? []) {
    if (!rule.when(change)) continue;
    const objectType = EVENT_TYPES[rule.type].object;
    for (const objectId of (rule.about ?? self)(change)) {
      if (rule.supersedesGroup) effects.push({ kind: 'drop', objectType, objectId });
      if (EVENT_TYPES[rule.type].grouped) {
        effects.push({ kind: 'group', agencyId: change.agencyId, objectType, objectId, at: change.at });
      } else {
        const data = rule.data?.(change) ?? {};
        effects.push({
          kind: 'emit',
          type: rule.type,
          agencyId: change.agencyId,
          objectType,
          objectId,
          data,
          at: change.at,
        });
      }
    }
  }
  return effects;
}
