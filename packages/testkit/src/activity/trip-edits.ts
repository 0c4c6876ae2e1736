import { sql } from 'kysely';
import { DAY_MS, type ActivityContext } from './context.ts';
import type { Trip } from './model.ts';
import { addItinerary, addOption, PLACES } from './trips.ts';
import { touching, type Choice, type Edit, type Write } from './writes.ts';

/** Edits of a trip that make trip.updated (grouped). */
export function tripEdits(ctx: ActivityContext, trip: Trip): Write[] {
  const { chance, choose, int, next, date } = ctx;
  const edit = (action: string, run: Edit): Write => touching('trip', trip.id, action, run);
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
          await addItinerary(ctx, trx, trip);
          return () => (trip.itinerary = true);
        }),
    edit('option.add', async (trx) => {
      const id = await addOption(ctx, trx, trip);
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
}

export function tripEditing(ctx: ActivityContext): Choice {
  const { choose, liveTrips } = ctx;
  return {
    makes: ['trip.updated'],
    weight: 6,
    pick: () => {
      const trip = choose(liveTrips());
      return trip && choose(tripEdits(ctx, trip));
    },
  };
}
