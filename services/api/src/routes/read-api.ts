import type { IRouter } from 'express';
import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { listContacts } from '@trips/db/contacts';
import { findContactPrecompiled, findPaymentPrecompiled, findTripPrecompiled } from '@trips/db/fast-paths';
import { listPayments } from '@trips/db/payments';
import { listTrips } from '@trips/db/trips';
import { presentContact, presentPayment, presentTrip, presentTripWithItinerary } from '../presenters.ts';
import { addResourceRoutes } from './resources.ts';

/**
 * Trips, payments and contacts: the read API of interface.md 4.1 and 4.3 with D4/D5. Lookups by
 * id run their SQL compiled once (the hot path); lists build theirs per request. Returns the paths
 * it adds.
 */
export function addReadApiRoutes(router: IRouter, db: Kysely<Database>): string[] {
  const trips = addResourceRoutes(router, db, {
    path: '/trips',
    noun: 'trip',
    scope: 'trips:read',
    find: findTripPrecompiled,
    list: listTrips,
    present: presentTripWithItinerary,
    presentInList: (row) => presentTrip(row),
  });
  const payments = addResourceRoutes(router, db, {
    path: '/payments',
    noun: 'payment',
    scope: 'payments:read',
    find: findPaymentPrecompiled,
    list: listPayments,
    present: presentPayment,
    presentInList: presentPayment,
  });
  const contacts = addResourceRoutes(router, db, {
    path: '/contacts',
    noun: 'contact',
    scope: 'contacts:read',
    find: findContactPrecompiled,
    list: listContacts,
    present: presentContact,
    presentInList: presentContact,
  });
  return [...trips, ...payments, ...contacts];
}
