// Dates of the demo book, laid out around the day it is seeded.

const DAY_MS = 86_400_000;

/** A calendar date `offset` days from `today`, as the 'YYYY-MM-DD' a `date` column takes. */
export function day(today: Date, offset: number): string {
  const base = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  return new Date(base + offset * DAY_MS).toISOString().slice(0, 10);
}

export function daysAgo(today: Date, days: number): Date {
  return new Date(today.getTime() - days * DAY_MS);
}

/** num_days must equal end - start + 1 when an end date is set (trips_num_days_matches_dates). */
export function fixedDates(today: Date, startOffset: number, numDays: number) {
  return {
    start_date: day(today, startOffset),
    end_date: day(today, startOffset + numDays - 1),
    num_days: numDays,
  };
}
