import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { addContactToTrip, insertContact } from '@trips/db/contacts';
import { insertPayment } from '@trips/db/payments';
import { insertTrip } from '@trips/db/trips';
import { createUser } from '@trips/db/users';
import { DEMO_CONTACTS } from './demo-contacts.ts';
import { demoPayments } from './demo-payments.ts';
import { demoTemplate, demoTrips } from './demo-trips.ts';

export interface DemoSeedInput {
  name?: string;
  /** Scopes of the demo key; the whole catalogue unless told. */
  scopes: string[];
  /** Dates are laid out around this day. */
  today?: Date;
  /** Where the client pages live; must be https (trips_url_is_https). */
  clientPageBase?: string;
}

export interface DemoSeed {
  agencyId: string;
  agencyName: string;
  ownerId: string;
  ownerEmail: string;
  key: { id: string; key: string; prefix: string; scopes: string[] };
  /** API-visible trips, in the order seeded; a good one to fetch first is `featuredTripId`. */
  tripIds: string[];
  featuredTripId: string;
  templateId: string;
  paymentIds: string[];
  contactIds: string[];
}

/**
 * Creates one independent demo agency (API enabled, subscription active) with an owner, golf
 * trips, payments, contacts and a key, all in one transaction: a failure leaves nothing behind.
 * Seeding again makes another agency; the owner's e-mail carries the agency id to stay unique.
 */
export async function seedDemoAgency(db: Kysely<Database>, input: DemoSeedInput): Promise<DemoSeed> {
  const today = input.today ?? new Date();
  const pageBase = input.clientPageBase ?? 'https://trips.example.com/p';
  return db.transaction().execute(async (trx) => {
    const agency = await createAgency(trx, {
      name: input.name ?? 'Fairway Golf Travel (demo)',
      apiEnabled: true,
      subscriptionStatus: 'active',
    });
    const ownerEmail = `owner.${agency.id.slice(4).toLowerCase()}@fairway-demo.example`;
    const owner = await createUser(trx, { agencyId: agency.id, email: ownerEmail, role: 'owner' });

    const tripIdsByKey = new Map<string, string>();
    const tripIds: string[] = [];
    for (const { key: tripKey, ...trip } of demoTrips(today, pageBase)) {
      const id = await insertTrip(trx, agency.id, trip);
      tripIdsByKey.set(tripKey, id);
      tripIds.push(id);
    }
    const { key: _key, ...template } = demoTemplate(today);
    const templateId = await insertTrip(trx, agency.id, template);

    const paymentIds: string[] = [];
    for (const { trip, ...payment } of demoPayments(today)) {
      paymentIds.push(await insertPayment(trx, agency.id, tripIdsByKey.get(trip)!, payment));
    }

    const contactIds: string[] = [];
    for (const { key: _key, trips, ...contact } of DEMO_CONTACTS) {
      const id = await insertContact(trx, agency.id, contact);
      contactIds.push(id);
      for (const trip of trips) await addContactToTrip(trx, agency.id, tripIdsByKey.get(trip)!, id);
    }

    const key = await createApiKey(trx, { agencyId: agency.id, scopes: input.scopes, name: 'Demo key' });
    return {
      agencyId: agency.id,
      agencyName: agency.name,
      ownerId: owner.id,
      ownerEmail,
      key: { id: key.id, key: key.key, prefix: key.prefix, scopes: key.scopes },
      tripIds,
      // Confirmed, published, with an itinerary: shows the most fields filled in.
      featuredTripId: tripIdsByKey.get('costadelsol')!,
      templateId,
      paymentIds,
      contactIds,
    };
  });
}
