import pg from 'pg';
import { sql } from 'kysely';
import pino from 'pino';
import { createDb } from '@trips/db';
import { createApiKey } from '@trips/db/api-keys';
import { ensureEventPartitions } from '@trips/db/events';
import { platformSecret } from '@trips/db/platform-secrets';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { Recorder } from '../../recorder/src/recorder.ts';
import { Loop } from '@trips/runtime';
import { EventCursors } from '../src/routes/event-cursors.ts';
import { agencyWithKey, client, startTestApi, type Fixture } from './support.ts';

// GET /api/v1/events (spec 4.2, D2, D6) against a real recorder: scopes, paging, cursors, expiry,
// retention, and the gap test: a reader paging while writers commit concurrently never skips.

const silent = pino({ level: 'silent' });
let t: TestDatabase;
let api: Awaited<ReturnType<typeof startTestApi>>;
let recorder: Recorder;
let loop: Loop;
let own: Fixture;
let get: ReturnType<typeof client>;

beforeAll(async () => {
  t = await createTestDatabase();
  api = await startTestApi(t);
  own = await agencyWithKey(t.db);
  get = client(api.url, own.key);
  recorder = new Recorder(
    t.db,
    { batchSize: 1000, groupQuietMs: 1, groupMaxMs: 1, retentionMs: 30 * 86_400_000 },
    silent,
  );
  await recorder.maintain();
  loop = new Loop(
    'record',
    async () => {
      const r = await recorder.runBatch();
      return r.changes + r.events.length;
    },
    5,
    silent,
  );
  loop.start();
});
afterAll(async () => {
  await loop.stop();
  await api.stop();
  await t.drop();
});

interface Page {
  data: {
    id: string;
    type: string;
    created_at: string;
    related_object: { type: string; id: string; url: string };
    data: Record<string, unknown>;
  }[];
  next_cursor: string;
  has_more: boolean;
}

async function readAll(
  read: ReturnType<typeof client>,
  after?: string,
  extra = '',
): Promise<{ events: Page['data']; cursor: string }> {
  const events: Page['data'] = [];
  let cursor = after;
  for (;;) {
    const res = await read(`/api/v1/events?limit=1000${cursor ? `&after=${cursor}` : ''}${extra}`);
    expect(res.status).toBe(200);
    const page = res.body as unknown as Page;
    events.push(...page.data);
    cursor = page.next_cursor;
    if (!page.has_more) return { events, cursor: cursor! };
  }
}

async function write(statements: string) {
  await sql.raw(statements).execute(t.db);
}

describe('reading', () => {
  let start: string;
  beforeAll(async () => {
    ({ cursor: start } = await readAll(get));
    await write(
      `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_r1', '${own.agencyId}', 'T', 3);
       INSERT INTO contacts (id, agency_id, first_name, last_name) VALUES ('con_r1', '${own.agencyId}', 'A', 'B');
       INSERT INTO payments (id, agency_id, trip_id, description, amount, currency, visibility)
         VALUES ('pay_r1', '${own.agencyId}', 'trp_r1', 'Deposit', 100, 'EUR', 'shown')`,
    );
    await write(`UPDATE trips SET status = 'planning' WHERE id = 'trp_r1'`);
    await waitFor(async () => (await readAll(get, start)).events.length === 4, { what: '4 events' });
  });

  test('events come oldest first as D6 records, and next_cursor is where the reader is now', async () => {
    const { events, cursor } = await readAll(get, start);
    expect(events.map((e) => e.type)).toEqual([
      'trip.created',
      'contact.created',
      'payment.created',
      'trip.status_changed',
    ]);
    expect(events[3]).toEqual({
      object: 'event',
      id: expect.stringMatching(/^evt_[0-9A-Za-z]{16}$/),
      type: 'trip.status_changed',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      related_object: { type: 'trip', id: 'trp_r1', url: '/api/v1/trips/trp_r1' },
      data: { from: 'proposal', to: 'planning' },
    });
    const again = await get(`/api/v1/events?after=${cursor}`);
    expect(again.body).toEqual({
      object: 'list',
      data: [],
      next_cursor: expect.any(String),
      has_more: false,
    });
  });

  test('an empty after= reads from the oldest event, exactly as without after', async () => {
    const absent = await get('/api/v1/events?limit=1000');
    const empty = await get('/api/v1/events?after=&limit=1000');
    expect(empty.status).toBe(200);
    expect(absent.body.data.length).toBeGreaterThanOrEqual(4);
    expect(empty.body.data).toEqual(absent.body.data);
    expect(empty.body.has_more).toBe(absent.body.has_more);
  });

  test('limit pages with has_more; every page has a next_cursor', async () => {
    const first = await get(`/api/v1/events?after=${start}&limit=3`);
    expect(first.body.data).toHaveLength(3);
    expect(first.body.has_more).toBe(true);
    const second = await get(`/api/v1/events?after=${first.body.next_cursor}&limit=3`);
    expect(second.body.data.map((e: { type: string }) => e.type)).toEqual(['trip.status_changed']);
    expect(second.body.has_more).toBe(false);
    expect(typeof second.body.next_cursor).toBe('string');
  });

  test('types filters; an unknown type is 400 invalid_request on types', async () => {
    const { events } = await readAll(get, start, '&types=payment.created,trip.status_changed');
    expect(events.map((e) => e.type)).toEqual(['payment.created', 'trip.status_changed']);
    const bad = await get('/api/v1/events?types=trip.created,trip.exploded');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', param: 'types' });
  });

  test('a key sees only the events of objects it may read (D2); events:read is needed', async () => {
    const tripsOnly = await createApiKey(t.db, {
      agencyId: own.agencyId,
      scopes: ['events:read', 'trips:read'],
    });
    const { events } = await readAll(client(api.url, tripsOnly.key), start);
    expect(events.map((e) => e.type)).toEqual(['trip.created', 'trip.status_changed']);

    const noEvents = await createApiKey(t.db, {
      agencyId: own.agencyId,
      scopes: ['trips:read', 'payments:read', 'contacts:read'],
    });
    const denied = await client(api.url, noEvents.key)('/api/v1/events');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('insufficient_scope');
  });

  test("another agency's events are invisible", async () => {
    const other = await agencyWithKey(t.db);
    const { events } = await readAll(client(api.url, other.key));
    expect(events).toEqual([]);
  });

  test('a malformed cursor is 400 on after; limit outside 1–1000 is 400 on limit', async () => {
    for (const after of [
      'garbage',
      'eyJ2IjoyfQ',
      encodeURIComponent('{"v":1}'),
      Buffer.from('{"v":1,"s":-1,"t":1}').toString('base64url'),
    ]) {
      const res = await get(`/api/v1/events?after=${after}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', param: 'after' });
    }
    for (const limit of ['0', '1001', 'ten']) {
      const res = await get(`/api/v1/events?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_request', param: 'limit' });
    }
  });

  test('a cursor of the readable format handed out before cursors were sealed is 410: resync', async () => {
    const res = await get(`/api/v1/events?after=${Buffer.from('{"v":1,"s":1,"t":1}').toString('base64url')}`);
    expect(res.status).toBe(410);
    expect(res.body.error).toMatchObject({
      code: 'cursor_expired',
      message: expect.stringMatching(/older format/),
    });
  });

  test('a cursor older than EVENT_RETENTION is 410 cursor_expired', async () => {
    const cursors = new EventCursors(await platformSecret(t.db, 'event_cursor_key'));
    const old = cursors.seal(own.agencyId, { seq: 1, at: Date.now() - 31 * 86_400_000 });
    const res = await get(`/api/v1/events?after=${old}`);
    expect(res.status).toBe(410);
    expect(res.body.error.code).toBe('cursor_expired');
  });

  test('a cursor is sealed: it shows no position, opens only for its agency, and cannot be altered', async () => {
    const other = await agencyWithKey(t.db);
    const { cursor } = await readAll(get);
    // The position inside is the platform's global seq; nothing of it may be read off the cursor.
    // Before, it was base64url JSON; now it is sealed afresh each time, so two cursors for the
    // same place (no event in between) are unrelated bytes.
    expect(() => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))).toThrow();
    const cursors = new EventCursors(await platformSecret(t.db, 'event_cursor_key'));
    const place = { seq: 1, at: 1 };
    expect(cursors.seal(own.agencyId, place)).not.toBe(cursors.seal(own.agencyId, place));
    expect(cursors.open(own.agencyId, cursors.seal(own.agencyId, place))).toEqual(place);
    expect((await readAll(client(api.url, other.key))).cursor).not.toBe(cursor);

    const refused = async (read: ReturnType<typeof client>, after: string) => {
      const res = await read(`/api/v1/events?after=${after}`);
      expect({ status: res.status, error: res.body.error }).toMatchObject({
        status: 400,
        error: { code: 'invalid_request', param: 'after' },
      });
    };
    await refused(client(api.url, other.key), cursor); // another agency's
    const bytes = Buffer.from(cursor, 'base64url');
    for (const at of [0, 5, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[at]! ^= 1;
      await refused(get, altered.toString('base64url'));
    }
    // Sealed under another key (another platform's, or a made-up one): refused.
    const { randomBytes } = await import('node:crypto');
    await refused(get, new EventCursors(randomBytes(32)).seal(own.agencyId, { seq: 1, at: Date.now() }));
    expect((await get(`/api/v1/events?after=${cursor}`)).status).toBe(200);
  });
});

describe('retention', () => {
  test('events older than EVENT_RETENTION are not served, and a short-retention cursor expires', async () => {
    const shortApi = await startTestApi(t, { EVENT_RETENTION: '2s' });
    try {
      const read = client(shortApi.url, own.key);
      const { cursor } = await readAll(read);
      await write(
        `INSERT INTO contacts (id, agency_id, first_name, last_name) VALUES ('con_ret', '${own.agencyId}', 'A', 'B')`,
      );
      await waitFor(async () => (await readAll(read)).events.some((e) => e.related_object.id === 'con_ret'));
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      expect((await readAll(read)).events.some((e) => e.related_object.id === 'con_ret')).toBe(false);
      expect((await read(`/api/v1/events?after=${cursor}`)).status).toBe(410);
    } finally {
      await shortApi.stop();
    }
  });

  test('expired days are dropped as whole partitions', async () => {
    const old = new Date(Date.now() - 40 * 86_400_000);
    await ensureEventPartitions(t.db, old, 0);
    const name = `events_p${old.toISOString().slice(0, 10).replaceAll('-', '')}`;
    await sql`INSERT INTO events (seq, agency_id, type, object_type, object_id, created_at) VALUES (0, ${own.agencyId}, 'trip.created', 'trip', 'trp_old', ${old.toISOString()})`.execute(
      t.db,
    );
    const dropped = await recorder.maintain();
    expect(dropped).toContain(name);
    const left = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM events WHERE object_id = 'trp_old'`.execute(t.db);
    expect(left.rows[0]!.n).toBe(0);
    const today = await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(t.db);
    expect(today.rows[0]!.n).toBeGreaterThan(0);
  });
});

describe('the gap test', () => {
  test('a reader paging while 8 writers commit out of order sees every committed change once, and no rolled-back one', async () => {
    const WRITERS = 8;
    const TXNS_PER_WRITER = 40;
    const agency = own.agencyId;
    await write(`CREATE TABLE naive_log (id bigserial PRIMARY KEY, trip_id text, status text)`);
    await write(
      `INSERT INTO trips (id, agency_id, title, num_days) SELECT 'trp_gap' || w, '${agency}', 'Gap', 3 FROM generate_series(0, ${WRITERS - 1}) w`,
    );
    const { cursor: start } = await waitFor(async () => {
      const r = await readAll(get);
      return r.events.filter((e) => e.related_object.id.startsWith('trp_gap')).length === WRITERS && r;
    });

    const STATUSES = ['planning', 'confirmed', 'active', 'completed', 'proposal'];
    const committed = new Map<string, number>(); // "trip from→to" → count
    let rolledBack = 0;
    let writing = true;

    const writer = async (w: number) => {
      const client = new pg.Client({ connectionString: t.url });
      await client.connect();
      let current = 'proposal';
      try {
        for (let i = 0; i < TXNS_PER_WRITER; i++) {
          const next = STATUSES[i % STATUSES.length]!;
          await client.query('BEGIN');
          await client.query(`UPDATE trips SET status = $1 WHERE id = $2`, [next, `trp_gap${w}`]);
          await client.query(`INSERT INTO naive_log (trip_id, status) VALUES ($1, $2)`, [
            `trp_gap${w}`,
            next,
          ]);
          // Hold the transaction open for a while: later-started ones commit first.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 30));
          if (Math.random() < 0.1) {
            await client.query('ROLLBACK');
            rolledBack++;
            // Keep the cycle: the same status is tried again next round.
            i--;
            if (rolledBack > 200) throw new Error('too many rollbacks');
            continue;
          }
          await client.query('COMMIT');
          const key = `trp_gap${w} ${current}→${next}`;
          committed.set(key, (committed.get(key) ?? 0) + 1);
          current = next;
        }
      } finally {
        await client.end();
      }
    };

    // The reader under test: GET /events with after, every few milliseconds.
    const seen: Page['data'] = [];
    let cursor = start;
    const reader = (async () => {
      while (writing || seen.length < WRITERS * TXNS_PER_WRITER) {
        const res = await get(`/api/v1/events?after=${cursor}&limit=7&types=trip.status_changed`);
        const page = res.body as unknown as Page;
        seen.push(...page.data);
        cursor = page.next_cursor;
        if (!page.has_more) await new Promise((resolve) => setTimeout(resolve, 3));
        if (!writing && seen.length >= WRITERS * TXNS_PER_WRITER) break;
      }
    })();

    // The naive reader: pages by an id taken when the row was written, not when it committed.
    const naiveSeen: number[] = [];
    const naive = (async () => {
      const db = createDb(t.url, { max: 1 });
      let last = 0;
      try {
        while (writing) {
          const rows = await sql<{
            id: number;
          }>`SELECT id FROM naive_log WHERE id > ${last} ORDER BY id`.execute(db);
          for (const r of rows.rows) naiveSeen.push(r.id);
          if (rows.rows.length) last = rows.rows.at(-1)!.id;
          await new Promise((resolve) => setTimeout(resolve, 3));
        }
      } finally {
        await db.destroy();
      }
    })();

    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    await waitFor(() => seen.length >= WRITERS * TXNS_PER_WRITER, {
      what: 'the reader to catch up',
      timeoutMs: 20_000,
    });
    writing = false;
    await Promise.all([reader, naive]);

    const ids = seen.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const got = new Map<string, number>();
    for (const e of seen) {
      const key = `${e.related_object.id} ${e.data.from}→${e.data.to}`;
      got.set(key, (got.get(key) ?? 0) + 1);
    }
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(committed));
    expect(seen).toHaveLength(WRITERS * TXNS_PER_WRITER);
    expect(rolledBack).toBeGreaterThan(0);

    const committedNaive = await sql<{ n: number }>`SELECT count(*)::int AS n FROM naive_log`.execute(t.db);
    expect(committedNaive.rows[0]!.n).toBe(WRITERS * TXNS_PER_WRITER);
    // Proof that the test can fail: paging by write-time ids missed rows committed late.
    expect(naiveSeen.length).toBeLessThan(WRITERS * TXNS_PER_WRITER);
  }, 60_000);
});
