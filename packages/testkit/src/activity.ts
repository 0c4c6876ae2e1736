import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '@trips/db';

// A golf travel agency at work, as the host application writes it: plain SQL on the write contract
// (docs/schema.md), one transaction per change. It keeps its own model of what it wrote, and for
// each committed change says which events interface.md section 6 (with D5/D6) requires, written
// out here by hand rather than taken from the recorder's catalogue, so a test can hold the
// recorder to it. Used by the system test; meant for a demo simulator too.

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

// ---- The model: what the agency has, as far as events are concerned -------------------------

interface Trip {
  id: string;
  template: boolean;
  title: string;
  status: string;
  published: boolean;
  accepted: boolean;
  region: string;
  golfers: number;
  numDays: number;
  start: string | null;
  itinerary: boolean;
  options: string[];
}

interface Payment {
  id: string;
  tripId: string;
  shown: boolean;
  cancelled: boolean;
  amount: number;
  paid: number;
}

interface Contact {
  id: string;
  trips: Set<string>;
}

/** Realistic next statuses (the database accepts any; the host application is this picky). */
const NEXT_STATUS: Record<string, string[]> = {
  proposal: ['planning', 'declined', 'cancelled'],
  planning: ['confirmed', 'cancelled'],
  confirmed: ['active', 'cancelled'],
  active: ['completed'],
  completed: [],
  declined: ['proposal'],
  cancelled: [],
};

const PLACES: [region: string, baseCamp: string][] = [
  ['Algarve, Portugal', 'Vilamoura'],
  ['Fife, Scotland', 'St Andrews'],
  ['Andalusia, Spain', 'Marbella'],
  ['South Carolina, USA', 'Kiawah Island'],
  ['California, USA', 'Carmel-by-the-Sea'],
  ['County Down, Northern Ireland', 'Newcastle'],
  ['Oregon, USA', 'Bandon'],
  ['Lazio, Italy', 'Rome'],
  ['Western Cape, South Africa', 'Stellenbosch'],
  ['Kent, England', 'Sandwich'],
];
const TRIP_NAMES = ['Spring Golf Week', 'Links Pilgrimage', 'Winter Sun', 'Buddies Trip', 'Open Getaway'];
const FIRST_NAMES = ['Fiona', 'Jack', 'Ana', 'Tom', 'Claire', 'Sam', 'Ines', 'Mateo', 'Priya', 'Liam'];
const LAST_NAMES = ['MacLeod', 'Nicholls', 'Ferreira', 'Watson', 'Dubois', 'Okafor', 'Rossi', 'Singh'];
const OPTIONS = ['Extra round', 'Caddie package', 'Course upgrade', 'Spa day', 'Airport transfer'];
const CURRENCIES = ['EUR', 'GBP', 'USD'];
const DAY_MS = 86_400_000;

/** A small seeded generator (mulberry32): the same seed, the same day. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** What one chosen change does: write it, then say what it made and update the model. */
interface Write {
  action: string;
  run(trx: Transaction<Database>): Promise<Outcome>;
}

interface Outcome {
  events: ExpectedEvent[];
  touched: ObjectRef[];
  deleted: ObjectRef[];
  /** Applied to the model only once the change is known to be committed. */
  apply(): void;
}

interface Choice {
  /** The event types this kind of change can make; kinds that make one not seen yet come first. */
  makes: string[];
  weight: number;
  /** A change of this kind that fits the agency now, or undefined when none does. */
  pick(): Write | undefined;
}

const event = (type: string, objectId: string, data: Record<string, unknown> = {}): ExpectedEvent => ({
  type,
  objectId,
  data,
});
const ref = (type: ActivityObjectType, id: string): ObjectRef => ({ type, id });
const none = (apply: () => void = () => {}): Outcome => ({ events: [], touched: [], deleted: [], apply });

async function one<T>(trx: Transaction<Database>, query: RawBuilder<T>): Promise<T> {
  const { rows } = await query.execute(trx);
  return rows[0]!;
}

export function createActivity(db: Kysely<Database>, options: ActivityOptions): Activity {
  const { agencyId } = options;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const random = generator(seed);
  const focusChance = options.focus ?? 0.6;
  const trips = new Map<string, Trip>();
  const payments = new Map<string, Payment>();
  const contacts = new Map<string, Contact>();
  const committed: CommittedChange[] = [];
  const made = new Set<string>();
  let counter = 0;
  let focus: { ref: ObjectRef; left: number } | undefined;
  let inDoubt: { xid: string; write: Write; outcome: Outcome; at: Date } | undefined;

  const chance = (p: number) => random() < p;
  const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
  const choose = <T>(items: readonly T[]): T | undefined =>
    items.length ? items[Math.floor(random() * items.length)] : undefined;
  const next = () => ++counter;
  const date = (daysAhead: number) => new Date(Date.now() + daysAhead * DAY_MS).toISOString().slice(0, 10);

  const liveTrips = () => [...trips.values()].filter((t) => !t.template);
  const templates = () => [...trips.values()].filter((t) => t.template);
  const visible = (p: Payment) => p.shown && !p.cancelled;
  const paymentsOf = (tripId: string) => [...payments.values()].filter((p) => p.tripId === tripId);
  const contactsOf = (tripId: string) => [...contacts.values()].filter((c) => c.trips.has(tripId));

  // ---- Trips and templates ----

  const insertTrip = async (trx: Transaction<Database>, template: boolean): Promise<Trip> => {
    const [region, baseCamp] = choose(PLACES)!;
    const title = `${template ? 'Template: ' : ''}${baseCamp} ${choose(TRIP_NAMES)} #${next()}`;
    const golfers = int(2, 16);
    const numDays = int(3, 9);
    const { id } = await one(
      trx,
      sql<{
        id: string;
      }>`INSERT INTO trips (agency_id, is_template, title, region, base_camp, num_days, golfers)
        VALUES (${agencyId}, ${template}, ${title}, ${region}, ${baseCamp}, ${numDays}, ${golfers}) RETURNING id`,
    );
    return {
      id,
      template,
      title,
      status: 'proposal',
      published: false,
      accepted: false,
      region,
      golfers,
      numDays,
      start: null,
      itinerary: false,
      options: [],
    };
  };

  const addItinerary = (trx: Transaction<Database>, trip: Trip) =>
    sql`INSERT INTO itineraries (trip_id, non_golfers, summary)
        VALUES (${trip.id}, ${int(0, 4)}, ${`Rounds at ${trip.region}, day ${next()}`})`.execute(trx);
  const addOption = async (trx: Transaction<Database>, trip: Trip) =>
    (
      await one(
        trx,
        sql<{ id: string }>`INSERT INTO trip_options (trip_id, name, price_amount, position)
          VALUES (${trip.id}, ${choose(OPTIONS)!}, ${int(2, 60) * 1000}, ${trip.options.length}) RETURNING id`,
      )
    ).id;

  /** Edits of a trip that make trip.updated (grouped). */
  const tripEdits = (trip: Trip): Write[] => {
    const edit = (action: string, run: (trx: Transaction<Database>) => Promise<() => void>): Write => ({
      action,
      run: async (trx) => {
        const apply = await run(trx);
        return { events: [], touched: [ref('trip', trip.id)], deleted: [], apply };
      },
    });
    const writes: Write[] = [
      edit('trip.rename', async (trx) => {
        const title = `${trip.title.replace(/ #\d+$/, '')} #${next()}`;
        await sql`UPDATE trips SET title = ${title} WHERE id = ${trip.id}`.execute(trx);
        return () => (trip.title = title);
      }),
      edit('trip.travellers', async (trx) => {
        const golfers = trip.golfers + (trip.golfers > 2 && chance(0.4) ? -1 : 1);
        await sql`UPDATE trips SET golfers = ${golfers} WHERE id = ${trip.id}`.execute(trx);
        return () => (trip.golfers = golfers);
      }),
      edit('trip.destination', async (trx) => {
        const [region, baseCamp] = choose(PLACES.filter(([r]) => r !== trip.region))!;
        await sql`UPDATE trips SET region = ${region}, base_camp = ${baseCamp} WHERE id = ${trip.id}`.execute(
          trx,
        );
        return () => (trip.region = region);
      }),
      edit('trip.dates', async (trx) => {
        // Flexible → fixed, fixed → another week, or fixed → flexible with another length.
        if (trip.start === null || chance(0.6)) {
          let start = date(int(20, 300));
          if (start === trip.start) start = date(301);
          const end = new Date(Date.parse(start) + (trip.numDays - 1) * DAY_MS).toISOString().slice(0, 10);
          await sql`UPDATE trips SET start_date = ${start}, end_date = ${end} WHERE id = ${trip.id}`.execute(
            trx,
          );
          return () => (trip.start = start);
        }
        const numDays = trip.numDays === 9 ? 8 : trip.numDays + 1;
        await sql`UPDATE trips SET start_date = null, end_date = null, num_days = ${numDays} WHERE id = ${trip.id}`.execute(
          trx,
        );
        return () => {
          trip.start = null;
          trip.numDays = numDays;
        };
      }),
      edit('trip.page_text', async (trx) => {
        const n = next();
        await (
          chance(0.5)
            ? sql`UPDATE trips SET client_page_headline = ${`Golf in ${trip.region} (${n})`} WHERE id = ${trip.id}`
            : sql`UPDATE trips SET client_page_message = ${`Tee times confirmed, version ${n}`} WHERE id = ${trip.id}`
        ).execute(trx);
        return () => {};
      }),
      trip.itinerary
        ? edit('itinerary.edit', async (trx) => {
            await sql`UPDATE itineraries SET non_golfers = non_golfers + 1, summary = ${`Revised plan ${next()}`}
                       WHERE trip_id = ${trip.id}`.execute(trx);
            return () => {};
          })
        : edit('itinerary.add', async (trx) => {
            await addItinerary(trx, trip);
            return () => (trip.itinerary = true);
          }),
      edit('option.add', async (trx) => {
        const id = await addOption(trx, trip);
        return () => trip.options.push(id);
      }),
    ];
    if (trip.itinerary && chance(0.2)) {
      writes.push(
        edit('itinerary.remove', async (trx) => {
          await sql`DELETE FROM itineraries WHERE trip_id = ${trip.id}`.execute(trx);
          return () => (trip.itinerary = false);
        }),
      );
    }
    const option = choose(trip.options);
    if (option) {
      writes.push(
        edit('option.edit', async (trx) => {
          await sql`UPDATE trip_options SET price_amount = coalesce(price_amount, 0) + 500 WHERE id = ${option}`.execute(
            trx,
          );
          return () => {};
        }),
        edit('option.remove', async (trx) => {
          await sql`DELETE FROM trip_options WHERE id = ${option}`.execute(trx);
          return () => trip.options.splice(trip.options.indexOf(option), 1);
        }),
      );
    }
    if (trip.published) {
      writes.push(
        edit('trip.page_moved', async (trx) => {
          await sql`UPDATE trips SET client_page_url = ${`https://trips.example.com/p/${trip.id}/${next()}`}
                   WHERE id = ${trip.id}`.execute(trx);
          return () => {};
        }),
      );
    }
    return writes;
  };

  const choices: Choice[] = [
    {
      makes: ['trip.created', 'trip.updated'],
      weight: 3,
      pick: () =>
        liveTrips().length >= 25
          ? undefined
          : {
              action: 'trip.create',
              run: async (trx) => {
                const trip = await insertTrip(trx, false);
                // Often with its itinerary in the same transaction: that part opens trip.updated.
                const withItinerary = chance(0.4);
                if (withItinerary) await addItinerary(trx, trip);
                return {
                  events: [event('trip.created', trip.id)],
                  touched: withItinerary ? [ref('trip', trip.id)] : [],
                  deleted: [],
                  apply: () => trips.set(trip.id, { ...trip, itinerary: withItinerary }),
                };
              },
            },
    },
    {
      makes: [],
      weight: 0.7,
      pick: () =>
        templates().length >= 6
          ? undefined
          : {
              action: 'template.create',
              run: async (trx) => {
                const template = await insertTrip(trx, true);
                await addItinerary(trx, template);
                const option = await addOption(trx, template);
                return none(() =>
                  trips.set(template.id, { ...template, itinerary: true, options: [option] }),
                );
              },
            },
    },
    {
      makes: [],
      weight: 0.7,
      pick: () => {
        const template = choose(templates());
        if (!template) return undefined;
        return {
          action: 'template.edit',
          run: async (trx) => {
            const title = `${template.title.replace(/ #\d+$/, '')} #${next()}`;
            await sql`UPDATE trips SET title = ${title}, golfers = golfers + 1 WHERE id = ${template.id}`.execute(
              trx,
            );
            if (template.itinerary)
              await sql`UPDATE itineraries SET non_golfers = non_golfers + 1 WHERE trip_id = ${template.id}`.execute(
                trx,
              );
            return none(() => {
              template.title = title;
              template.golfers++;
            });
          },
        };
      },
    },
    {
      makes: ['trip.created'],
      weight: 1,
      pick: () => {
        const template = choose(templates());
        if (!template) return undefined;
        return {
          action: 'template.convert',
          run: async (trx) => {
            const title = template.title.replace(/^Template: /, '');
            await sql`UPDATE trips SET is_template = false, title = ${title} WHERE id = ${template.id}`.execute(
              trx,
            );
            return {
              events: [event('trip.created', template.id)],
              touched: [],
              deleted: [],
              apply: () => {
                template.template = false;
                template.title = title;
              },
            };
          },
        };
      },
    },
    {
      makes: ['trip.deleted'],
      weight: 0.5,
      pick: () => {
        // Kept simple: a trip with no payments and no contacts becomes a template.
        const trip = choose(liveTrips().filter((t) => !paymentsOf(t.id).length && !contactsOf(t.id).length));
        if (!trip) return undefined;
        return {
          action: 'trip.to_template',
          run: async (trx) => {
            const title = `Template: ${trip.title}`;
            await sql`UPDATE trips SET is_template = true, title = ${title} WHERE id = ${trip.id}`.execute(
              trx,
            );
            return {
              events: [event('trip.deleted', trip.id)],
              touched: [],
              deleted: [ref('trip', trip.id)],
              apply: () => {
                trip.template = true;
                trip.title = title;
              },
            };
          },
        };
      },
    },
    {
      makes: ['trip.status_changed'],
      weight: 2,
      pick: () => {
        const trip = choose(liveTrips().filter((t) => NEXT_STATUS[t.status]!.length));
        if (!trip) return undefined;
        const to = choose(NEXT_STATUS[trip.status]!)!;
        return {
          action: 'trip.status',
          run: async (trx) => {
            await sql`UPDATE trips SET status = ${to} WHERE id = ${trip.id}`.execute(trx);
            return {
              events: [event('trip.status_changed', trip.id, { from: trip.status, to })],
              touched: [],
              deleted: [],
              apply: () => (trip.status = to),
            };
          },
        };
      },
    },
    {
      makes: ['trip.accepted', 'trip.status_changed', 'trip.updated'],
      weight: 1.5,
      pick: () => {
        const trip = choose(
          liveTrips().filter((t) => !t.accepted && ['proposal', 'planning'].includes(t.status)),
        );
        if (!trip) return undefined;
        return {
          action: 'trip.accept',
          run: async (trx) => {
            // The client accepts a proposal: one update moves it to planning, sets accepted_at and
            // often renames it, which makes three events from one change (D6).
            const from = trip.status;
            const renamed = chance(0.5)
              ? `${trip.title.replace(/ #\d+$/, '')} (booked) #${next()}`
              : undefined;
            await sql`UPDATE trips SET status = 'planning', accepted_at = now(), title = ${renamed ?? trip.title}
                       WHERE id = ${trip.id}`.execute(trx);
            return {
              events: [
                ...(from === 'planning'
                  ? []
                  : [event('trip.status_changed', trip.id, { from, to: 'planning' })]),
                event('trip.accepted', trip.id),
              ],
              touched: renamed ? [ref('trip', trip.id)] : [],
              deleted: [],
              apply: () => {
                trip.status = 'planning';
                trip.accepted = true;
                trip.title = renamed ?? trip.title;
              },
            };
          },
        };
      },
    },
    {
      makes: ['trip.published', 'trip.unpublished'],
      weight: 1.5,
      pick: () => {
        const trip = choose(liveTrips());
        if (!trip) return undefined;
        const publish = !trip.published;
        return {
          action: publish ? 'trip.publish' : 'trip.unpublish',
          run: async (trx) => {
            const url = publish ? `https://trips.example.com/p/${trip.id}` : null;
            await sql`UPDATE trips SET client_page_published = ${publish}, client_page_url = ${url}
                       WHERE id = ${trip.id}`.execute(trx);
            return {
              events: [event(publish ? 'trip.published' : 'trip.unpublished', trip.id)],
              touched: [],
              deleted: [],
              apply: () => (trip.published = publish),
            };
          },
        };
      },
    },
    {
      makes: ['trip.updated'],
      weight: 6,
      pick: () => {
        const trip = choose(liveTrips());
        return trip && choose(tripEdits(trip));
      },
    },
    {
      makes: ['trip.deleted', 'payment.deleted', 'contact.updated'],
      weight: 0.8,
      pick: () => {
        const trip = choose(
          liveTrips().filter((t) => ['completed', 'declined', 'cancelled'].includes(t.status)),
        );
        if (!trip) return undefined;
        return {
          action: 'trip.delete',
          run: async (trx) => {
            // Its payments and contact links go with it: a payment the client could see is
            // deleted (payment.deleted), and each linked contact left a trip (contact.updated).
            const shown = paymentsOf(trip.id).filter(visible);
            const linked = contactsOf(trip.id);
            await sql`DELETE FROM trips WHERE id = ${trip.id}`.execute(trx);
            return {
              events: [event('trip.deleted', trip.id), ...shown.map((p) => event('payment.deleted', p.id))],
              touched: linked.map((c) => ref('contact', c.id)),
              deleted: [ref('trip', trip.id), ...shown.map((p) => ref('payment', p.id))],
              apply: () => {
                trips.delete(trip.id);
                for (const p of paymentsOf(trip.id)) payments.delete(p.id);
                for (const c of linked) c.trips.delete(trip.id);
              },
            };
          },
        };
      },
    },

    // ---- Payments ----
    {
      makes: ['payment.created'],
      weight: 2,
      pick: () => {
        const trip = choose(
          liveTrips().filter((t) => !['completed', 'declined', 'cancelled'].includes(t.status)),
        );
        if (!trip || paymentsOf(trip.id).length >= 4) return undefined;
        const shown = chance(0.5);
        return {
          action: shown ? 'payment.create' : 'payment.draft',
          run: async (trx) => {
            const amount = int(10, 400) * 1000;
            const { id } = await one(
              trx,
              sql<{
                id: string;
              }>`INSERT INTO payments (agency_id, trip_id, description, amount, currency, due_date, visibility)
                VALUES (${agencyId}, ${trip.id}, ${choose(['Deposit', 'Balance', 'Green fees', 'Hotel'])!},
                        ${amount}, ${choose(CURRENCIES)!}, ${date(int(5, 90))}, ${shown ? 'shown' : 'draft'})
                RETURNING id`,
            );
            const apply = () =>
              payments.set(id, { id, tripId: trip.id, shown, cancelled: false, amount, paid: 0 });
            return shown
              ? { events: [event('payment.created', id)], touched: [], deleted: [], apply }
              : none(apply);
          },
        };
      },
    },
    {
      makes: ['payment.created'],
      weight: 1.5,
      pick: () => {
        const payment = choose([...payments.values()].filter((p) => !p.shown && !p.cancelled));
        if (!payment) return undefined;
        if (chance(0.3)) {
          return {
            action: 'payment.edit_draft',
            run: async (trx) => {
              await sql`UPDATE payments SET amount = amount + 1000 WHERE id = ${payment.id}`.execute(trx);
              return none(() => (payment.amount += 1000));
            },
          };
        }
        return {
          action: 'payment.show',
          run: async (trx) => {
            await sql`UPDATE payments SET visibility = 'shown' WHERE id = ${payment.id}`.execute(trx);
            return {
              events: [event('payment.created', payment.id)],
              touched: [],
              deleted: [],
              apply: () => (payment.shown = true),
            };
          },
        };
      },
    },
    {
      makes: ['payment.updated', 'payment.paid'],
      weight: 3,
      pick: () => {
        const payment = choose([...payments.values()].filter(visible));
        return payment && choose(paymentChanges(payment));
      },
    },
    {
      makes: ['payment.deleted'],
      weight: 1,
      pick: () => {
        const payment = choose([...payments.values()].filter((p) => !visible(p) || chance(0.3)));
        if (!payment) return undefined;
        const wasVisible = visible(payment);
        const how = wasVisible
          ? choose(['cancel', 'delete', ...(payment.paid < payment.amount ? ['unshow'] : [])])!
          : 'delete';
        return {
          action: `payment.${how}`,
          run: async (trx) => {
            if (how === 'cancel')
              await sql`UPDATE payments SET cancelled_at = now() WHERE id = ${payment.id}`.execute(trx);
            else if (how === 'unshow')
              await sql`UPDATE payments SET visibility = 'draft' WHERE id = ${payment.id}`.execute(trx);
            else await sql`DELETE FROM payments WHERE id = ${payment.id}`.execute(trx);
            const apply = () => {
              if (how === 'cancel') payment.cancelled = true;
              else if (how === 'unshow') payment.shown = false;
              else payments.delete(payment.id);
            };
            return wasVisible
              ? {
                  events: [event('payment.deleted', payment.id)],
                  touched: [],
                  deleted: [ref('payment', payment.id)],
                  apply,
                }
              : none(apply);
          },
        };
      },
    },

    // ---- Contacts ----
    {
      makes: ['contact.created', 'contact.updated'],
      weight: 1.5,
      pick: () => {
        if (contacts.size >= 30) return undefined;
        const trip = chance(0.4) ? choose(liveTrips()) : undefined;
        return {
          action: 'contact.create',
          run: async (trx) => {
            const first = choose(FIRST_NAMES)!;
            const last = choose(LAST_NAMES)!;
            const { id } = await one(
              trx,
              sql<{ id: string }>`INSERT INTO contacts (agency_id, first_name, last_name, email, phone)
                VALUES (${agencyId}, ${first}, ${last}, ${`${first}.${last}.${next()}@example.com`.toLowerCase()},
                        ${chance(0.5) ? `+44 7700 9${int(10000, 99999)}` : null})
                RETURNING id`,
            );
            // Added straight onto a trip in the same transaction: joining it is contact.updated.
            if (trip)
              await sql`INSERT INTO trip_contacts (agency_id, trip_id, contact_id) VALUES (${agencyId}, ${trip.id}, ${id})`.execute(
                trx,
              );
            return {
              events: [event('contact.created', id)],
              touched: trip ? [ref('contact', id)] : [],
              deleted: [],
              apply: () => contacts.set(id, { id, trips: new Set(trip ? [trip.id] : []) }),
            };
          },
        };
      },
    },
    {
      makes: ['contact.updated'],
      weight: 3,
      pick: () => {
        const contact = choose([...contacts.values()]);
        return contact && choose(contactChanges(contact));
      },
    },
    {
      makes: ['contact.deleted'],
      weight: 0.6,
      pick: () => {
        const contact = choose([...contacts.values()]);
        if (!contact) return undefined;
        return {
          action: 'contact.delete',
          run: async (trx) => {
            await sql`DELETE FROM contacts WHERE id = ${contact.id}`.execute(trx);
            return {
              events: [event('contact.deleted', contact.id)],
              touched: [],
              deleted: [ref('contact', contact.id)],
              apply: () => contacts.delete(contact.id),
            };
          },
        };
      },
    },
  ];

  /** Changes of a payment the client sees. */
  function paymentChanges(payment: Payment): Write[] {
    const touch = (action: string, run: (trx: Transaction<Database>) => Promise<() => void>): Write => ({
      action,
      run: async (trx) => ({
        events: [],
        touched: [ref('payment', payment.id)],
        deleted: [],
        apply: await run(trx),
      }),
    });
    if (payment.paid === payment.amount) {
      // Paid in full: a refund reopens it (payment.updated), as does re-dating the payment.
      return [
        touch('payment.refund', async (trx) => {
          const paid = Math.floor(payment.amount / 2);
          await sql`UPDATE payments SET amount_paid = ${paid}, paid_at = null WHERE id = ${payment.id}`.execute(
            trx,
          );
          return () => (payment.paid = paid);
        }),
      ];
    }
    const writes: Write[] = [
      touch('payment.edit', async (trx) => {
        await (
          chance(0.5)
            ? sql`UPDATE payments SET due_date = due_date + 7 WHERE id = ${payment.id}`
            : sql`UPDATE payments SET description = ${`Deposit, revised ${next()}`} WHERE id = ${payment.id}`
        ).execute(trx);
        return () => {};
      }),
      touch('payment.amount', async (trx) => {
        await sql`UPDATE payments SET amount = amount + 2500 WHERE id = ${payment.id}`.execute(trx);
        return () => (payment.amount += 2500);
      }),
      {
        action: 'payment.pay',
        run: async (trx) => {
          await sql`UPDATE payments SET amount_paid = amount, paid_at = now() WHERE id = ${payment.id}`.execute(
            trx,
          );
          return {
            events: [event('payment.paid', payment.id)],
            touched: [],
            deleted: [],
            apply: () => (payment.paid = payment.amount),
          };
        },
      },
    ];
    // A part payment that leaves something to pay: the final one is payment.pay.
    if (payment.amount - payment.paid >= 3) {
      writes.push(
        touch('payment.part', async (trx) => {
          const paid = payment.paid + Math.floor((payment.amount - payment.paid) / 3);
          await sql`UPDATE payments SET amount_paid = ${paid} WHERE id = ${payment.id}`.execute(trx);
          return () => (payment.paid = paid);
        }),
      );
    }
    return writes;
  }

  /** Changes of a contact: its details, or joining or leaving a trip. */
  function contactChanges(contact: Contact): Write[] {
    const touch = (action: string, run: (trx: Transaction<Database>) => Promise<() => void>): Write => ({
      action,
      run: async (trx) => ({
        events: [],
        touched: [ref('contact', contact.id)],
        deleted: [],
        apply: await run(trx),
      }),
    });
    const writes = [
      touch('contact.edit', async (trx) => {
        await (
          chance(0.5)
            ? sql`UPDATE contacts SET phone = ${`+351 912 ${next()}`} WHERE id = ${contact.id}`
            : sql`UPDATE contacts SET email = ${`guest.${next()}@example.com`} WHERE id = ${contact.id}`
        ).execute(trx);
        return () => {};
      }),
    ];
    const join = choose(liveTrips().filter((t) => !contact.trips.has(t.id)));
    if (join) {
      writes.push(
        touch('contact.join', async (trx) => {
          await sql`INSERT INTO trip_contacts (agency_id, trip_id, contact_id) VALUES (${agencyId}, ${join.id}, ${contact.id})`.execute(
            trx,
          );
          return () => contact.trips.add(join.id);
        }),
      );
    }
    const leave = choose([...contact.trips]);
    if (leave) {
      writes.push(
        touch('contact.leave', async (trx) => {
          await sql`DELETE FROM trip_contacts WHERE trip_id = ${leave} AND contact_id = ${contact.id}`.execute(
            trx,
          );
          return () => contact.trips.delete(leave);
        }),
      );
    }
    return writes;
  }

  /** Another edit of the object the last edit touched, if it still takes one. */
  function focused(): Write | undefined {
    if (!focus || focus.left <= 0 || !chance(focusChance)) return undefined;
    focus.left--;
    const { type, id } = focus.ref;
    if (type === 'trip') {
      const trip = trips.get(id);
      return trip && !trip.template
        ? choose(tripEdits(trip).filter((w) => w.action !== 'option.remove'))
        : undefined;
    }
    if (type === 'payment') {
      const payment = payments.get(id);
      return payment && visible(payment)
        ? choose(paymentChanges(payment).filter((w) => w.action !== 'payment.pay'))
        : undefined;
    }
    const contact = contacts.get(id);
    return contact && choose(contactChanges(contact));
  }

  function pick(): Write {
    const focusedWrite = focused();
    if (focusedWrite) return focusedWrite;
    // Kinds that can make an event type not made yet weigh more, so every type shows up early.
    const weighted = choices.map((c) => ({
      c,
      w: c.weight * (c.makes.some((type) => !made.has(type)) ? 4 : 1),
    }));
    for (let tries = 0; tries < 50; tries++) {
      let r = random() * weighted.reduce((sum, x) => sum + x.w, 0);
      const choice = weighted.find((x) => (r -= x.w) < 0) ?? weighted.at(-1)!;
      const write = choice.c.pick();
      if (write) return write;
    }
    throw new Error('activity: no change fits the agency (a bug in the model)');
  }

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
    for (const e of outcome.events) made.add(e.type);
    for (const t of outcome.touched) made.add(`${t.type}.updated`);
    // Edits come in runs: the planner keeps working on what they just changed.
    const edited = outcome.touched[0];
    if (edited && !outcome.events.length && (!focus || focus.ref.id !== edited.id)) {
      focus = { ref: edited, left: chance(0.15) ? int(15, 30) : int(1, 6) };
    }
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
    const write = pick();
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
