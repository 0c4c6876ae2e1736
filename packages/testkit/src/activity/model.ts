// ---- The model: what the agency has, as far as events are concerned -------------------------

export interface Trip {
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

export interface Payment {
  id: string;
  tripId: string;
  shown: boolean;
  cancelled: boolean;
  amount: number;
  paid: number;
}

export interface Contact {
  id: string;
  trips: Set<string>;
}

/** What the activity knows it wrote, changed only once a change is known to be committed. */
export interface Model {
  readonly trips: Map<string, Trip>;
  readonly payments: Map<string, Payment>;
  readonly contacts: Map<string, Contact>;
  liveTrips(): Trip[];
  templates(): Trip[];
  paymentsOf(tripId: string): Payment[];
  contactsOf(tripId: string): Contact[];
}

/** A payment the client sees. */
export const visible = (p: Payment) => p.shown && !p.cancelled;

export function createModel(): Model {
  const trips = new Map<string, Trip>();
  const payments = new Map<string, Payment>();
  const contacts = new Map<string, Contact>();
  return {
    trips,
    payments,
    contacts,
    liveTrips: () => [...trips.values()].filter((t) => !t.template),
    templates: () => [...trips.values()].filter((t) => t.template),
    paymentsOf: (tripId) => [...payments.values()].filter((p) => p.tripId === tripId),
    contactsOf: (tripId) => [...contacts.values()].filter((c) => c.trips.has(tripId)),
  };
}
