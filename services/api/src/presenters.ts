import type { Contact, Payment, TripStatus, Trip } from '@trips/contracts';
import type { ContactRecord } from '@trips/db/contacts';
import type { PaymentRecord } from '@trips/db/payments';
import type { TripListRecord, TripRecord } from '@trips/db/trips';

// Rows to public objects (interface.md 2.1, decisions.md D5). Timestamps are ISO 8601 UTC with
// milliseconds (D4); dates stay the 'YYYY-MM-DD' text Postgres sends.

const timestamp = (value: Date) => value.toISOString();
const optionalTimestamp = (value: Date | null) => (value === null ? null : value.toISOString());

/** `non_golfers` is a number only on retrieval of a trip with an itinerary; null in lists. */
export function presentTrip(row: TripListRecord, nonGolfers: number | null = null): Trip {
  return {
    object: 'trip',
    id: row.id,
    title: row.title,
    status: row.status as TripStatus,
    destination: { region: row.region, base_camp: row.base_camp },
    dates: {
      mode: row.start_date === null ? 'flexible' : 'fixed',
      start_date: row.start_date,
      end_date: row.end_date,
      num_days: row.num_days,
    },
    travelers: { golfers: row.golfers, non_golfers: nonGolfers },
    client_page: { published: row.client_page_published, url: row.client_page_url },
    accepted_at: optionalTimestamp(row.accepted_at),
    created_at: timestamp(row.created_at),
    updated_at: timestamp(row.updated_at),
  };
}

export const presentTripWithItinerary = (row: TripRecord): Trip => presentTrip(row, row.non_golfers);

export function presentPayment(row: PaymentRecord): Payment {
  return {
    object: 'payment',
    id: row.id,
    trip_id: row.trip_id,
    description: row.description,
    amount: row.amount,
    currency: row.currency,
    due_date: row.due_date,
    status: row.paid_at === null ? 'open' : 'paid',
    paid_at: optionalTimestamp(row.paid_at),
    created_at: timestamp(row.created_at),
    updated_at: timestamp(row.updated_at),
  };
}

export function presentContact(row: ContactRecord): Contact {
  return {
    object: 'contact',
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    email: row.email,
    phone: row.phone,
    trip_ids: row.trip_ids,
    created_at: timestamp(row.created_at),
    updated_at: timestamp(row.updated_at),
  };
}
