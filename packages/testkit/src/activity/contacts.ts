import { sql } from 'kysely';
import type { ActivityContext } from './context.ts';
import type { Contact } from './model.ts';
import { event, one, ref, touching, type Choice, type Edit, type Write } from './writes.ts';

// Contacts: created, edited, joining and leaving trips (contact.updated), deleted.

const FIRST_NAMES = ['Fiona', 'Jack', 'Ana', 'Tom', 'Claire', 'Sam', 'Ines', 'Mateo', 'Priya', 'Liam'];
const LAST_NAMES = ['MacLeod', 'Nicholls', 'Ferreira', 'Watson', 'Dubois', 'Okafor', 'Rossi', 'Singh'];

export function newContact({
  agencyId,
  chance,
  choose,
  int,
  next,
  liveTrips,
  contacts,
}: ActivityContext): Choice {
  return {
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
  };
}

export function contactChange(ctx: ActivityContext): Choice {
  const { choose, contacts } = ctx;
  return {
    makes: ['contact.updated'],
    weight: 3,
    pick: () => {
      const contact = choose([...contacts.values()]);
      return contact && choose(contactChanges(ctx, contact));
    },
  };
}

export function contactDeletion({ choose, contacts }: ActivityContext): Choice {
  return {
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
  };
}

/** Changes of a contact: its details, or joining or leaving a trip. */
export function contactChanges(
  { agencyId, chance, choose, next, liveTrips }: ActivityContext,
  contact: Contact,
): Write[] {
  const touch = (action: string, run: Edit): Write => touching('contact', contact.id, action, run);
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
