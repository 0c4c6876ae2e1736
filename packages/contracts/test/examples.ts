import type { Contact, ErrorBody, Event, EventList, List, Payment, Trip } from '../src/index.ts';

// Realistic bodies as the API sends them. Typed with the package's own interfaces, so a change to
// a type that the schemas do not follow (or the reverse) breaks either tsc or the tests.

export const trip: Trip = {
  object: 'trip',
  id: 'trp_4kXq9ZtR2mB7nW1c',
  title: 'Algarve Golf Week',
  status: 'confirmed',
  destination: { region: 'Algarve', base_camp: 'Vilamoura' },
  dates: { mode: 'fixed', start_date: '2026-11-21', end_date: '2026-11-27', num_days: 7 },
  travelers: { golfers: 8, non_golfers: 2 },
  client_page: { published: true, url: 'https://trips.example.com/p/algarve-2026' },
  accepted_at: '2026-10-02T08:00:00.000Z',
  created_at: '2026-09-14T12:30:45.123Z',
  updated_at: '2026-11-21T10:15:30.123Z',
};

export const flexibleTrip: Trip = {
  ...trip,
  id: 'trp_Flex0000000000001',
  status: 'proposal',
  destination: { region: null, base_camp: null },
  dates: { mode: 'flexible', start_date: null, end_date: null, num_days: 5 },
  travelers: { golfers: 4, non_golfers: null },
  client_page: { published: false, url: null },
  accepted_at: null,
};

export const payment: Payment = {
  object: 'payment',
  id: 'pay_8bT2qLmN0xYz3AaC',
  trip_id: trip.id,
  description: 'Deposit',
  amount: 125000,
  currency: 'EUR',
  due_date: '2026-10-15',
  status: 'open',
  paid_at: null,
  created_at: '2026-09-20T09:00:00.000Z',
  updated_at: '2026-09-20T09:00:00.000Z',
};

export const paidPayment: Payment = {
  ...payment,
  due_date: null,
  status: 'paid',
  paid_at: '2026-10-10T14:22:01.500Z',
};

export const contact: Contact = {
  object: 'contact',
  id: 'con_Q1w2E3r4T5y6U7i8',
  first_name: 'Ana',
  last_name: 'Sousa',
  email: 'ana@example.com',
  phone: null,
  trip_ids: [trip.id],
  created_at: '2026-09-14T12:31:00.000Z',
  updated_at: '2026-09-14T12:31:00.000Z',
};

export const statusChanged: Event = {
  object: 'event',
  id: 'evt_Z9y8X7w6V5u4T3s2',
  type: 'trip.status_changed',
  created_at: '2026-11-21T10:15:30.123Z',
  related_object: { type: 'trip', id: trip.id, url: `/api/v1/trips/${trip.id}` },
  data: { from: 'planning', to: 'confirmed' },
};

export const tripUpdated: Event = {
  object: 'event',
  id: 'evt_A1b2C3d4E5f6G7h8',
  type: 'trip.updated',
  created_at: '2026-11-21T10:16:30.123Z',
  related_object: { type: 'trip', id: trip.id, url: `/api/v1/trips/${trip.id}` },
  data: {},
};

export const paymentPaid: Event = {
  object: 'event',
  id: 'evt_P0a1I2d3P4a5I6d7',
  type: 'payment.paid',
  created_at: '2026-10-10T14:22:01.600Z',
  related_object: { type: 'payment', id: payment.id, url: `/api/v1/payments/${payment.id}` },
  data: {},
};

export const tripList: List<Trip> = {
  object: 'list',
  data: [
    { ...trip, travelers: { golfers: 8, non_golfers: null } },
    { ...flexibleTrip, updated_at: '2026-11-21T10:15:31.000Z' },
  ],
  next_cursor: 'eyJ1IjoiMjAyNi0xMS0yMSJ9',
  has_more: true,
};

export const lastTripPage: List<Trip> = { object: 'list', data: [], next_cursor: null, has_more: false };

export const paymentList: List<Payment> = {
  object: 'list',
  data: [payment, paidPayment],
  next_cursor: null,
  has_more: false,
};

export const contactList: List<Contact> = {
  object: 'list',
  data: [contact],
  next_cursor: null,
  has_more: false,
};

export const eventList: EventList = {
  object: 'list',
  data: [paymentPaid, statusChanged, tripUpdated],
  next_cursor: 'c_0000000042',
  has_more: false,
};

export const emptyEventList: EventList = {
  object: 'list',
  data: [],
  next_cursor: 'c_0000000042',
  has_more: false,
};

export const notFound: ErrorBody = {
  error: {
    code: 'not_found',
    message: "No trip 'trp_x' in this agency.",
    request_id: 'req_7HkP2sLq9ZxC4vBn',
  },
};

export const invalidRequest: ErrorBody = {
  error: {
    code: 'invalid_request',
    message: 'limit must be a whole number from 1 to 200.',
    request_id: 'req_7HkP2sLq9ZxC4vBn',
    param: 'limit',
  },
};
