import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { LogCapture, type TestDatabase } from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { startApiService, type ApiService } from '../src/server.ts';

export async function startTestApi(t: TestDatabase, env: Record<string, string> = {}) {
  const logs = new LogCapture();
  const config = readConfig({
    DATABASE_URL: t.url,
    PORT: '0',
    API_METRICS_PORT: '0',
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    ...env,
  });
  const api: ApiService = await startApiService(config, logs.logger);
  return { ...api, logs };
}

export interface Fixture {
  agencyId: string;
  key: string;
  keyId: string;
}

export async function agencyWithKey(
  db: Kysely<Database>,
  scopes: string[] = ['trips:read', 'payments:read', 'contacts:read', 'events:read'],
  agency: Parameters<typeof createAgency>[1] = {
    name: 'Fairway Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  },
): Promise<Fixture> {
  const { id: agencyId } = await createAgency(db, agency);
  const { key, id: keyId } = await createApiKey(db, { agencyId, scopes });
  return { agencyId, key, keyId };
}

export async function insertTrip(
  db: Kysely<Database>,
  agencyId: string,
  values: Record<string, unknown> = {},
) {
  return db
    .insertInto('trips')
    .values({ agency_id: agencyId, title: 'Algarve spring', num_days: 7, ...values } as never)
    .returning(['id'])
    .executeTakeFirstOrThrow();
}

/** A contact of the agency (Rory Fairway unless `values` say otherwise), linked to `tripIds`. */
export async function insertContact(
  db: Kysely<Database>,
  agencyId: string,
  tripIds: string[] = [],
  values: Record<string, unknown> = {},
) {
  const contact = await db
    .insertInto('contacts')
    .values({ agency_id: agencyId, first_name: 'Rory', last_name: 'Fairway', ...values } as never)
    .returning(['id'])
    .executeTakeFirstOrThrow();
  if (tripIds.length > 0) {
    await db
      .insertInto('trip_contacts')
      .values(tripIds.map((tripId) => ({ agency_id: agencyId, trip_id: tripId, contact_id: contact.id })))
      .execute();
  }
  return contact;
}

export function client(baseUrl: string, key?: string) {
  return async (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (key !== undefined && !headers.has('authorization')) headers.set('authorization', `Bearer ${key}`);
    const res = await fetch(`${baseUrl}${path}`, { ...init, headers });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: res.status, headers: res.headers, body: body as Record<string, any>, text };
  };
}
