import { sql } from 'kysely';
import pg from 'pg';
import { assertValid, validate, type SchemaName } from '@trips/contracts';
import { createDb } from '@trips/db';
import { canSeeOtherTransactions, syncHorizon } from '@trips/db/sync';
import { listTrips } from '@trips/db/trips';
import { MISSING_STATS_PRIVILEGE } from '../src/server.ts';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import { agencyWithKey, client, insertContact, insertTrip, startTestApi, type Fixture } from './support.ts';

let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let own: Fixture;
let other: Fixture;
let get: ReturnType<typeof client>;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
  other = await agencyWithKey(t.db, undefined, {
    name: 'Other',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  get = client(api.url, own.key);
});
afterAll(async () => {
  await api.stop();
  await t.drop();
});

const LIST_SCHEMAS: Record<string, SchemaName> = {
  '/api/v1/trips': 'TripList',
  '/api/v1/payments': 'PaymentList',
  '/api/v1/contacts': 'ContactList',
};

async function readAll(path: string, params: Record<string, string>) {
  const seen: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query = new URLSearchParams({ ...params, ...(cursor && { cursor }) });
    const res = await get(`${path}?${query}`);
    expect(res.status).toBe(200);
    expect(validate(LIST_SCHEMAS[path]!, res.body)).toEqual([]);
    seen.push(...res.body.data);
    cursor = res.body.next_cursor;
    expect(res.body.has_more).toBe(cursor !== null);
    pages++;
  } while (cursor);
  return { seen, pages };
}

describe('GET /trips', () => {
  test('pages through every trip in (updated_at, id) order, non_golfers null, no other agency', async () => {
    const ids = [];
    for (let i = 0; i < 7; i++) {
      const trip = await insertTrip(t.db, own.agencyId, { title: `Trip ${i}` });
      if (i % 2) await t.db.insertInto('itineraries').values({ trip_id: trip.id, non_golfers: 2 }).execute();
      ids.push(trip.id);
    }
    await insertTrip(t.db, other.agencyId);
    await insertTrip(t.db, own.agencyId, { is_template: true });
    const { seen, pages } = await readAll('/api/v1/trips', { limit: '3' });
    expect(pages).toBe(3);
    expect(seen.map((trip) => trip.id).sort()).toEqual([...ids].sort());
    for (const trip of seen) expect(trip.travelers.non_golfers).toBeNull();
    // The order is the database's (updated_at, id) in microseconds; the API shows milliseconds, so
    // two trips in one millisecond cannot be ordered from the answers alone: compare with the table.
    const stored = await t.db
      .selectFrom('trips')
      .select('id')
      .where('agency_id', '=', own.agencyId)
      .where('is_template', '=', false)
      .orderBy('updated_at')
      .orderBy('id')
      .execute();
    expect(seen.map((trip) => trip.id)).toEqual(stored.map((row) => row.id));
  });

  test('updated_since returns trips changed at or after it', async () => {
    const before = await insertTrip(t.db, own.agencyId);
    await sql`SELECT pg_sleep(0.02)`.execute(t.db);
    const since = new Date().toISOString();
    await sql`SELECT pg_sleep(0.02)`.execute(t.db);
    const after = await insertTrip(t.db, own.agencyId);
    await t.db.updateTable('trips').set({ title: 'Renamed' }).where('id', '=', before.id).execute();
    const { seen } = await readAll('/api/v1/trips', { updated_since: since });
    expect(seen.map((trip) => trip.id).sort()).toEqual([before.id, after.id].sort());
  });

  test('updated_since is any RFC 3339 date-time: the offset applied, digits past the microsecond cut', async () => {
    const trip = await insertTrip(t.db, own.agencyId);
    const { rows } = await sql<{ at: string }>`
      SELECT to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at FROM trips WHERE id = ${trip.id}
    `.execute(t.db);
    const [whole, micros] = rows[0]!.at.split('.') as [string, string];
    /** The instant updated_at + `plus` µs, written at +05:30 with a seventh fractional digit. */
    const inIndia = (plus: number) => {
      const exact = BigInt(Date.parse(`${whole}Z`)) * 1000n + BigInt(micros) + BigInt(plus);
      const local = new Date(Number(exact / 1000n) + 5.5 * 3_600_000).toISOString().slice(0, 19);
      return `${local.replace('T', 't')}.${String(exact % 1_000_000n).padStart(6, '0')}9+05:30`;
    };
    const ids = async (since: string) => {
      const res = await get(`/api/v1/trips?${new URLSearchParams({ updated_since: since, limit: '200' })}`);
      expect(res.status).toBe(200);
      return res.body.data.map((row: { id: string }) => row.id);
    };
    expect(await ids(inIndia(0))).toContain(trip.id);
    expect(await ids(inIndia(1))).not.toContain(trip.id);
    for (const since of ['2026-11-21t10:15:30z', '2026-01-01T00:00:00-23:59', '0050-03-01T00:00:00+14:00']) {
      expect([since, (await get(`/api/v1/trips?updated_since=${encodeURIComponent(since)}`)).status]).toEqual(
        [since, 200],
      );
    }
  });

  test('default limit is 50 and the maximum 200', async () => {
    for (let i = 0; i < 55; i++) await insertTrip(t.db, own.agencyId);
    const res = await get('/api/v1/trips');
    expect(res.body.data).toHaveLength(50);
    expect(res.body.has_more).toBe(true);
    expect((await get('/api/v1/trips?limit=200')).status).toBe(200);
  });

  test.each([
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=1&limit=2', 'limit'],
    ['updated_since=yesterday', 'updated_since'],
    ['updated_since=2026-02-30T00:00:00Z', 'updated_since'],
    ['updated_since=2026-11-21T10:15:30', 'updated_since'],
    ['updated_since=2026-11-21T10:15:30%2B24:00', 'updated_since'],
    ['updated_since=2026-11-21T24:00:00Z', 'updated_since'],
    ['updated_since=0000-01-01T00:00:00Z', 'updated_since'],
    ['cursor=garbage!', 'cursor'],
    [`cursor=${Buffer.from('{"u":"x","i":"y"}').toString('base64url')}`, 'cursor'],
    ['updatedSince=2026-01-01T00:00:00Z', 'updatedSince'],
  ])('?%s is 400 invalid_request naming %s', async (query, param) => {
    const res = await get(`/api/v1/trips?${query}`);
    expect(res.status).toBe(400);
    assertValid('Error', res.body);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', param });
  });
});

describe('payments and contacts (D5)', () => {
  test("a shown payment is returned; drafts, cancelled ones and a template's are 404 and never listed", async () => {
    const trip = await insertTrip(t.db, own.agencyId);
    const base = {
      agency_id: own.agencyId,
      trip_id: trip.id,
      description: 'Deposit',
      amount: 120000,
      currency: 'EUR',
    };
    const [shown, paid, draft, cancelled] = await t.db
      .insertInto('payments')
      .values([
        { ...base, visibility: 'shown', due_date: '2027-01-15' },
        { ...base, visibility: 'shown', amount_paid: 120000, paid_at: '2026-11-20T08:00:00.000Z' },
        { ...base, visibility: 'draft' },
        { ...base, visibility: 'shown', cancelled_at: new Date() },
      ])
      .returning('id')
      .execute();
    const res = await get(`/api/v1/payments/${shown!.id}`);
    assertValid('Payment', res.body);
    expect(res.body).toMatchObject({
      object: 'payment',
      id: shown!.id,
      trip_id: trip.id,
      amount: 120000,
      currency: 'EUR',
      due_date: '2027-01-15',
      status: 'open',
      paid_at: null,
    });
    expect((await get(`/api/v1/payments/${paid!.id}`)).body).toMatchObject({
      status: 'paid',
      paid_at: '2026-11-20T08:00:00.000Z',
    });
    for (const hidden of [draft!, cancelled!])
      expect((await get(`/api/v1/payments/${hidden.id}`)).status).toBe(404);
    const { seen } = await readAll('/api/v1/payments', {});
    expect(seen.map((p) => p.id).sort()).toEqual([shown!.id, paid!.id].sort());
  });

  test('a contact lists its trips, templates excluded; other agencies see 404', async () => {
    const trip = await insertTrip(t.db, own.agencyId);
    const template = await insertTrip(t.db, own.agencyId, { is_template: true });
    const contact = await insertContact(t.db, own.agencyId, [trip.id, template.id], {
      email: 'rory@example.com',
    });
    const res = await get(`/api/v1/contacts/${contact.id}`);
    assertValid('Contact', res.body);
    expect(res.body).toMatchObject({
      object: 'contact',
      email: 'rory@example.com',
      phone: null,
      trip_ids: [trip.id],
    });
    expect((await client(api.url, other.key)(`/api/v1/contacts/${contact.id}`)).status).toBe(404);
    const { seen } = await readAll('/api/v1/contacts', {});
    expect(seen.map((c) => c.id)).toContain(contact.id);
  });
});

describe('a trip turned into a template and back (D5)', () => {
  /** Flips the trip and answers what an updated_since sync started just before sees of its parts. */
  async function flipAndSync(tripId: string, isTemplate: boolean) {
    await sql`SELECT pg_sleep(0.02)`.execute(t.db);
    const since = new Date().toISOString();
    await sql`SELECT pg_sleep(0.02)`.execute(t.db);
    await t.db.updateTable('trips').set({ is_template: isTemplate }).where('id', '=', tripId).execute();
    return {
      payments: (await readAll('/api/v1/payments', { updated_since: since })).seen,
      contacts: (await readAll('/api/v1/contacts', { updated_since: since })).seen,
    };
  }

  test("its payments and its contacts' trip_ids come up in updated_since sync; without the touch they did not", async () => {
    const trip = await insertTrip(t.db, own.agencyId);
    const payment = await t.db
      .insertInto('payments')
      .values({
        agency_id: own.agencyId,
        trip_id: trip.id,
        description: 'Deposit',
        amount: 50000,
        currency: 'EUR',
        visibility: 'shown',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const contact = await insertContact(t.db, own.agencyId, [trip.id], { first_name: 'Ada' });
    const contactIn = (seen: any[]) => seen.find((c) => c.id === contact.id);
    const paymentIds = (seen: any[]) => seen.map((p) => p.id);

    // The naive schema, without the trigger: a reader that syncs misses both changes.
    await sql`ALTER TABLE trips DISABLE TRIGGER trips_template_flip_touches_parts`.execute(t.db);
    const naive = { hidden: await flipAndSync(trip.id, true), shown: await flipAndSync(trip.id, false) };
    await sql`ALTER TABLE trips ENABLE TRIGGER trips_template_flip_touches_parts`.execute(t.db);
    expect(contactIn(naive.hidden.contacts)).toBeUndefined();
    expect(paymentIds(naive.shown.payments)).not.toContain(payment.id);

    // Turned into a template: the contact no longer lists the trip, and says so in sync; the
    // payment is hidden (the reader learns that from trip.deleted).
    const hidden = await flipAndSync(trip.id, true);
    expect(contactIn(hidden.contacts)).toMatchObject({ trip_ids: [] });
    expect(paymentIds(hidden.payments)).not.toContain(payment.id);
    expect((await get(`/api/v1/payments/${payment.id}`)).status).toBe(404);

    // Turned back into a trip: the payment and the contact's trip come back in sync.
    const shown = await flipAndSync(trip.id, false);
    expect(paymentIds(shown.payments)).toContain(payment.id);
    expect(contactIn(shown.contacts)).toMatchObject({ trip_ids: [trip.id] });
  });
});

describe('list sync under concurrent writers', () => {
  /**
   * Writers update trips in transactions that pause before committing, so rows become visible
   * out of updated_at order. A reader syncs with updated_since = the newest updated_at it saw.
   * Every committed update must be seen. The same reader without the horizon must miss some,
   * which proves this test can fail.
   */
  async function syncRace(useHorizon: boolean) {
    const tripIds: string[] = [];
    for (let i = 0; i < 20; i++) tripIds.push((await insertTrip(t.db, own.agencyId)).id);
    const committed = new Map<string, number>(); // trip id → last committed version
    const seen = new Map<string, number>();
    let writing = true;

    const writer = async (n: number) => {
      const conn = new pg.Client({ connectionString: t.url });
      await conn.connect();
      for (let v = 1; v <= 12; v++) {
        const id = tripIds[(n * 7 + v) % tripIds.length]!;
        await conn.query('BEGIN');
        // Some transactions idle before they write: their rows carry the time of the write, later
        // than the transaction's start, and the horizon must still not pass them.
        await new Promise((resolve) => setTimeout(resolve, Math.random() < 0.5 ? Math.random() * 40 : 0));
        const { rows } = await conn.query(
          `UPDATE trips SET golfers = golfers + 1 WHERE id = $1 RETURNING golfers`,
          [id],
        );
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 40));
        await conn.query('COMMIT');
        committed.set(id, Math.max(committed.get(id) ?? 0, rows[0].golfers));
      }
      await conn.end();
    };

    const reader = async () => {
      let since: string | undefined;
      const readOnce = async () => {
        let after;
        do {
          const page = await listTrips(t.db, own.agencyId, {
            updatedSince: since,
            after,
            limit: 50,
            useHorizon,
          });
          for (const row of page.rows) {
            seen.set(row.id, Math.max(seen.get(row.id) ?? 0, row.golfers));
            const at = row.updated_at.toISOString();
            if (!since || at > since) since = at;
          }
          after = page.next ?? undefined;
        } while (after);
      };
      while (writing) {
        await readOnce();
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await readOnce(); // one last sync after the writers are done
    };

    const readerDone = reader();
    await Promise.all(Array.from({ length: 8 }, (_, n) => writer(n)));
    writing = false;
    await readerDone;
    return [...committed].filter(([id, version]) => (seen.get(id) ?? 0) < version).length;
  }

  test('the horizon makes the reader miss nothing; a naive reader misses some', async () => {
    expect(await syncRace(true)).toBe(0);
    expect(await syncRace(false)).toBeGreaterThan(0);
  });
});

describe('what holds list sync back', () => {
  const ids = async (updatedSince: string) =>
    (await listTrips(t.db, own.agencyId, { updatedSince, limit: 200 })).rows.map((row) => row.id);
  const touch = (id: string) => sql`UPDATE trips SET golfers = golfers + 1 WHERE id = ${id}`.execute(t.db);

  test("an open transaction that has written nothing, like pg_dump's, does not; a writer's does until it commits", async () => {
    const [a, b, c] = [
      await insertTrip(t.db, own.agencyId),
      await insertTrip(t.db, own.agencyId),
      await insertTrip(t.db, own.agencyId),
    ];
    // From the database's clock, to the microsecond: a JS Date would round into c's millisecond.
    const { rows } = await sql<{ since: string }>`
      SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS since
    `.execute(t.db);
    const since = rows[0]!.since;
    const session = new pg.Client({ connectionString: t.url });
    await session.connect();
    try {
      // What pg_dump does: one snapshot, held while it reads.
      await session.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await session.query('SELECT count(*) FROM trips');
      await touch(a.id);
      expect(await ids(since)).toEqual([a.id]);

      // The same transaction, idle until now, writes: its row carries the time of that write.
      await session.query('UPDATE trips SET golfers = golfers + 1 WHERE id = $1', [b.id]);
      await touch(c.id);
      // Now a writer, it holds the horizon at its start, before a: the list waits for it.
      expect(await ids(since)).toEqual([]);
      await session.query('COMMIT');
      expect(await ids(since)).toEqual([a.id, b.id, c.id]);
    } finally {
      await session.end();
    }
  });
});

describe("the horizon needs a role that sees other sessions' transactions", () => {
  const role = `trips_nostats_${Math.random().toString(36).slice(2, 10)}`;
  const asRole = () => {
    const url = new URL(t.url);
    url.username = role;
    url.password = '';
    return url.toString();
  };
  beforeAll(() => sql`CREATE ROLE ${sql.id(role)} LOGIN`.execute(t.db));
  afterAll(() => sql`DROP ROLE IF EXISTS ${sql.id(role)}`.execute(t.db));

  /** The horizon as `role` sees it while another session's transaction, begun first, stays open. */
  async function horizonBehindOpenTransaction() {
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    const db = createDb(asRole(), { max: 1 });
    try {
      await other.query('BEGIN');
      // A writer: it holds a transaction id, as any transaction that has written does.
      const { rows } = await other.query(
        `SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS started, pg_current_xact_id()`,
      );
      await sql`SELECT pg_sleep(0.01)`.execute(db);
      return {
        started: rows[0].started as string,
        horizon: await syncHorizon(db),
        ok: await canSeeOtherTransactions(db),
      };
    } finally {
      await other.query('ROLLBACK');
      await other.end();
      await db.destroy();
    }
  }

  test('without pg_read_all_stats the horizon passes an open transaction, so the API will not start', async () => {
    const blind = await horizonBehindOpenTransaction();
    expect(blind.ok).toBe(false);
    expect(blind.horizon > blind.started).toBe(true); // a late commit of that writer would be skipped
    await expect(startTestApi(t, { DATABASE_URL: asRole() })).rejects.toThrow(MISSING_STATS_PRIVILEGE);

    await sql`GRANT pg_read_all_stats TO ${sql.id(role)}`.execute(t.db);
    const seeing = await horizonBehindOpenTransaction();
    expect(seeing.ok).toBe(true);
    expect(seeing.horizon <= seeing.started).toBe(true);
  });
});
