import { sql } from 'kysely';
import type { ActivityContext } from './context.ts';
import { addItinerary, addOption, insertTrip } from './trips.ts';
import { event, none, ref, type Choice } from './writes.ts';

// Templates: trips rows with is_template set. Writing or editing one makes no event; a template
// turned into a trip is trip.created, and a trip turned into a template is trip.deleted.

export function newTemplate(ctx: ActivityContext): Choice {
  const { templates, trips } = ctx;
  return {
    makes: [],
    weight: 0.7,
    pick: () =>
      templates().length >= 6
        ? undefined
        : {
            action: 'template.create',
            run: async (trx) => {
              const template = await insertTrip(ctx, trx, true);
              await addItinerary(ctx, trx, template);
              const option = await addOption(ctx, trx, template);
              return none(() => trips.set(template.id, { ...template, itinerary: true, options: [option] }));
            },
          },
  };
}

export function templateEdit({ choose, next, templates }: ActivityContext): Choice {
  return {
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
  };
}

export function templateConversion({ choose, templates }: ActivityContext): Choice {
  return {
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
  };
}

export function tripToTemplate({ choose, liveTrips, paymentsOf, contactsOf }: ActivityContext): Choice {
  return {
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
          await sql`UPDATE trips SET is_template = true, title = ${title} WHERE id = ${trip.id}`.execute(trx);
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
  };
}
