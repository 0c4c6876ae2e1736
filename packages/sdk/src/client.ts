import { consume, type ConsumeOptions } from './consumer.ts';
import { HttpClient, type ClientOptions } from './http.ts';
import type { ContactList, PaymentList, TripList } from './openapi-types.ts';
import { EventsResource, ObjectResource, type Contacts, type Payments, type Trips } from './resources.ts';

class Events extends EventsResource {
  /**
   * Calls `handler` for every event in cursor order, at least once, and stores the cursor only
   * after the handler succeeded. Runs until `signal` aborts. See consumer.ts.
   */
  consume(options: ConsumeOptions): Promise<void> {
    return consume(this, options);
  }
}

/**
 * The API client: `new TripService({ apiKey, baseUrl })`. Every call is a GET. Without `baseUrl`
 * it talks to `TRIPS_BASE_URL` from the environment when that is set, else to
 * `http://localhost:3000`, as the `trips` command does.
 */
export class TripService {
  readonly trips: Trips;
  readonly payments: Payments;
  readonly contacts: Contacts;
  readonly events: Events;

  constructor(options: ClientOptions) {
    const http = new HttpClient(options);
    this.trips = new ObjectResource<TripList['data'][number], TripList>(http, '/api/v1/trips');
    this.payments = new ObjectResource<PaymentList['data'][number], PaymentList>(http, '/api/v1/payments');
    this.contacts = new ObjectResource<ContactList['data'][number], ContactList>(http, '/api/v1/contacts');
    this.events = new Events(http);
  }
}
