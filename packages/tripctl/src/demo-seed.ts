import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { agencyObjectIds, createAgency, findNewestAgencyOwnedAt, updateAgency } from '@trips/db/agencies';
import { API_KEY_PATTERN, createApiKey, findKeyCredentials, hashApiKey } from '@trips/db/api-keys';
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
  key: { id: string; key: string; scopes: string[] };
  /** API-visible trips, in the order seeded; a good one to fetch first is `featuredTripId`. */
  tripIds: string[];
  /** Undefined only when a reused agency has no trip left. */
  featuredTripId: string | undefined;
  templateId: string | undefined;
  paymentIds: string[];
  contactIds: string[];
}

/** Demo owners' e-mail addresses are at this reserved example domain, which also marks the demo agency. */
const DEMO_OWNER_DOMAIN = 'fairway-demo.example';
const DEMO_KEY_NAME = 'Demo key';
// Confirmed, published, with an itinerary: shows the most fields filled in.
const FEATURED_TRIP = 'costadelsol';

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
    const ownerEmail = `owner.${agency.id.slice(4).toLowerCase()}@${DEMO_OWNER_DOMAIN}`;
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

    const key = await createApiKey(trx, { agencyId: agency.id, scopes: input.scopes, name: DEMO_KEY_NAME });
    return {
      agencyId: agency.id,
      agencyName: agency.name,
      ownerId: owner.id,
      ownerEmail,
      key: { id: key.id, key: key.key, scopes: key.scopes },
      tripIds,
      featuredTripId: tripIdsByKey.get(FEATURED_TRIP)!,
      templateId,
      paymentIds,
      contactIds,
    };
  });
}

/**
 * The newest demo agency an earlier seed made, made ready again: API access on, subscription
 * active. Its key is `keepKey` while that is a key of this agency not revoked (keys are stored
 * hashed, so the caller keeps the plaintext, as scripts/start.sh does in .demo/); else a new demo
 * key. No key is revoked: a client still using an earlier one goes on working. Undefined when
 * there is no demo agency yet. What the simulator has changed since stays as it is.
 */
export async function reuseDemoAgency(
  db: Kysely<Database>,
  input: DemoSeedInput & { keepKey?: string },
): Promise<(DemoSeed & { keyKept: boolean }) | undefined> {
  return db.transaction().execute(async (trx) => {
    const found = await findNewestAgencyOwnedAt(trx, DEMO_OWNER_DOMAIN);
    if (!found) return undefined;
    await updateAgency(trx, found.id, { apiEnabled: true, subscriptionStatus: 'active' });
    const kept = input.keepKey ? await liveKeyOf(trx, found.id, input.keepKey) : undefined;
    const key =
      kept ?? (await createApiKey(trx, { agencyId: found.id, scopes: input.scopes, name: DEMO_KEY_NAME }));
    const contents = await agencyObjectIds(trx, found.id);
    const featuredTitle = demoTrips(new Date(), '').find((t) => t.key === FEATURED_TRIP)?.title;
    return {
      agencyId: found.id,
      agencyName: found.name,
      ownerId: found.owner_id,
      ownerEmail: found.owner_email,
      key: { id: key.id, key: key.key, scopes: key.scopes },
      keyKept: kept !== undefined,
      tripIds: contents.trips.map((t) => t.id),
      featuredTripId: (contents.trips.find((t) => t.title === featuredTitle) ?? contents.trips[0])?.id,
      templateId: contents.templateIds[0],
      paymentIds: contents.paymentIds,
      contactIds: contents.contactIds,
    };
  });
}

/** `key` with its id and scopes, when it is a key of `agencyId` that is not revoked. */
async function liveKeyOf(db: Kysely<Database>, agencyId: string, key: string) {
  if (!API_KEY_PATTERN.test(key)) return undefined;
  const found = await findKeyCredentials(db, hashApiKey(key));
  if (!found || found.revoked || found.agencyId !== agencyId) return undefined;
  return { id: found.keyId, key, scopes: found.scopes };
}
