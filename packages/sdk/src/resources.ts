import { TripServiceError } from './errors.ts';
import type { HttpClient, RequestOptions } from './http.ts';
import type {
  Contact,
  ContactList,
  Event,
  EventList,
  EventType,
  ListQueries,
  Payment,
  PaymentList,
  Trip,
  TripList,
} from './openapi-types.ts';
import { PagedList } from './pagination.ts';

export interface ObjectListParams {
  /** Only objects changed at or after this time (`updated_since`). */
  updatedSince?: Date | string;
  /** Page size, 1–200; default 50. */
  limit?: number;
  /** Start at this `next_cursor` of an earlier page. */
  cursor?: string;
}

export interface EventListParams {
  /** Only events after this cursor (a `next_cursor` you stored); without it, the oldest retained. */
  after?: string;
  /** Only events of these types. */
  types?: readonly EventType[];
  /** Page size, 1–1000; default 100. */
  limit?: number;
}

type ObjectPath = '/api/v1/trips' | '/api/v1/payments' | '/api/v1/contacts';

function objectQuery(params: ObjectListParams, cursor: string | undefined): ListQueries[ObjectPath] {
  const since = params.updatedSince;
  return {
    updated_since: since instanceof Date ? since.toISOString() : since,
    limit: params.limit,
    cursor,
  };
}

/** retrieve(id) and list(params) of one kind of object. */
export class ObjectResource<T, L extends { data: T[]; next_cursor: string | null; has_more: boolean }> {
  protected readonly http: HttpClient;
  private readonly path: ObjectPath;

  constructor(http: HttpClient, path: ObjectPath) {
    this.http = http;
    this.path = path;
  }

  retrieve(id: string, options?: RequestOptions): Promise<T> {
    if (typeof id !== 'string' || id === '') throw new TypeError(`retrieve: id must be a non-empty string.`);
    return this.http.get<T>(`${this.path}/${encodeURIComponent(id)}`, undefined, options);
  }

  list(params: ObjectListParams = {}, options?: RequestOptions): PagedList<T, L & { object: 'list' }> {
    return new PagedList(
      (cursor) => this.http.get(this.path, objectQuery(params, cursor), options),
      params.cursor,
    );
  }
}

export type Trips = ObjectResource<Trip, TripList>;
export type Payments = ObjectResource<Payment, PaymentList>;
export type Contacts = ObjectResource<Contact, ContactList>;

/** What `fetchRelatedObject` answers for each kind of related object. */
export interface RelatedObjects {
  trip: Trip;
  payment: Payment;
  contact: Contact;
}

/**
 * A cursor goes back to the API in a query and is printed for a person to paste into a shell
 * (`--after`): the API's are base64url, so anything but visible ASCII is not one.
 */
const CURSOR = /^[\x21-\x7e]+$/;

/** Why a GET /events answer is not a page of events, or undefined when it is one. */
function eventPageProblem(page: unknown): string | undefined {
  const p = page as Partial<Record<keyof EventList, unknown>> | null;
  if (typeof p !== 'object' || p === null || p.object !== 'list') return 'its object is not "list"';
  if (!Array.isArray(p.data)) return 'its data is not an array';
  if (typeof p.next_cursor !== 'string' || !CURSOR.test(p.next_cursor))
    return 'its next_cursor is not a cursor';
  if (typeof p.has_more !== 'boolean') return 'its has_more is not true or false';
  return undefined;
}

export class EventsResource {
  protected readonly http: HttpClient;

  constructor(http: HttpClient) {
    this.http = http;
  }

  /**
   * One page of GET /events, its envelope checked: a page without a usable `next_cursor` would
   * send a reader back to the oldest event, or put into its cursor what the API never gave.
   * The events themselves are the caller's to check.
   */
  private async page(query: ListQueries['/api/v1/events'], options?: RequestOptions): Promise<EventList> {
    const page = await this.http.get<EventList>('/api/v1/events', query, options);
    const problem = eventPageProblem(page);
    if (problem)
      throw new TripServiceError({
        status: 200,
        code: 'invalid_response',
        message: `The API answered GET /api/v1/events with a body that is not a page of events: ${problem}.`,
      });
    return page;
  }

  /** Events oldest first; iterating stops at the present (`has_more` false). */
  list(params: EventListParams = {}, options?: RequestOptions): PagedList<Event, EventList> {
    return new PagedList<Event, EventList>((after) => {
      const query: ListQueries['/api/v1/events'] = {
        after,
        limit: params.limit,
        types: params.types?.length ? [...params.types] : undefined,
      };
      return this.page(query, options);
    }, params.after);
  }

  /**
   * A cursor for "now": reading after it gives only events recorded from here on. The API has
   * no such call, so this reads to the end of the retained events and keeps the last cursor.
   */
  async currentCursor(
    params: Omit<EventListParams, 'limit'> = {},
    options?: RequestOptions,
  ): Promise<string> {
    let after = params.after;
    for (;;) {
      const page = await this.page(
        { after, limit: 1000, types: params.types?.length ? [...params.types] : undefined },
        options,
      );
      after = page.next_cursor;
      if (!page.has_more) return after;
    }
  }

  /** The trip, payment or contact the event concerns as it is now, or null when it is gone (404). */
  async fetchRelatedObject<E extends Event>(
    event: E,
    options?: RequestOptions,
  ): Promise<RelatedObjects[E['related_object']['type']] | null> {
    const related = event?.related_object;
    if (!related || typeof related.url !== 'string' || !related.url.startsWith('/api/v1/'))
      throw new TypeError('fetchRelatedObject: pass an event as the API or a webhook gave it.');
    try {
      return await this.http.get(related.url, undefined, options);
    } catch (error) {
      if (error instanceof TripServiceError && error.code === 'not_found') return null;
      throw error;
    }
  }
}
