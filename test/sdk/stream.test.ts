import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, createServer, request, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhook, setWebhookEnabled } from '@trips/db/webhooks';
import { waitFor } from '@trips/testkit';
import {
  createEventStream,
  fileCursorStore,
  memoryDedupe,
  signWebhookForTest,
  TripService,
  type DedupeStore,
  type EventSource,
  type Event,
  type EventStream,
} from '../../packages/sdk/src/index.ts';
import { freePort } from '../system/cluster.ts';
import { insertTrip, startStack, type Stack } from './stack.ts';

// Webhooks and the cursor in one handler (issue 25, item 6) against the real API, recorder and
// dispatcher, delivering over HTTPS: a receiver is offline for part of a run of hundreds of
// events (deliveries refused, retried, given up), or its webhook is switched off, and in the end
// the handler was called exactly once for every event id.

let stack: Stack;
let dir: string;
const receivers: Receiver[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  stack = await startStack({ dispatcher: true });
  dir = await mkdtemp(join(tmpdir(), 'trips-stream-'));
}, 60_000);
afterAll(async () => {
  for (const receiver of receivers) await receiver.offline();
  for (const server of servers) {
    server.close();
    server.closeAllConnections();
  }
  await rm(dir, { recursive: true, force: true });
  await stack?.stop();
}, 30_000);

/** A receiver as an agency runs it: an HTTPS server handing deliveries to a stream, on one port. */
interface Receiver {
  port: number;
  calls: Map<string, number>;
  sources: Record<EventSource, number>;
  online(dedupe?: DedupeStore): Promise<void>;
  offline(): Promise<void>;
}

function receiver(port: number, client: TripService, secret: string, cursorFile: string): Receiver {
  const calls = new Map<string, number>();
  const sources: Record<EventSource, number> = { webhook: 0, cursor: 0 };
  let server: Server | undefined;
  let stream: EventStream | undefined;
  let reading: Promise<void> | undefined;
  const self: Receiver = {
    port,
    calls,
    sources,
    async online(dedupe) {
      // A fresh stream, as a restarted process makes it: only the cursor file and the dedupe store
      // given carry over.
      stream = createEventStream({
        client,
        secrets: secret,
        cursorStore: fileCursorStore(cursorFile),
        dedupe,
        types: ['trip.created'],
        pollIntervalMs: 300,
        retry: { baseMs: 50, capMs: 500 },
        handler: (event, { source }) => {
          calls.set(event.id, (calls.get(event.id) ?? 0) + 1);
          sources[source]++;
        },
      });
      reading = stream.start();
      const handle = stream.webhookHandler;
      server = createServer(
        { key: stack.ca!.key, cert: stack.ca!.cert },
        (req, res) => void handle(req, res),
      );
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
    async offline() {
      await stream?.stop();
      await reading;
      if (server) {
        server.close();
        server.closeAllConnections();
        await once(server, 'close');
      }
      server = stream = reading = undefined;
    },
  };
  receivers.push(self);
  return self;
}

/** A dedupe store in Postgres, as an agency would keep one beside its data: it outlives a restart. */
function postgresDedupe(table: string): DedupeStore & { create(): Promise<void>; hits: number } {
  const db = stack.db;
  const store = {
    hits: 0,
    create: () =>
      db.schema
        .createTable(table)
        .addColumn('id', 'text', (c) => c.primaryKey())
        .execute(),
    has: async (id: string) => {
      const seen = await db
        .selectFrom(table as never)
        .select('id' as never)
        .where('id' as never, '=', id as never)
        .executeTakeFirst();
      if (seen) store.hits++;
      return seen !== undefined;
    },
    add: async (id: string) => {
      await db
        .insertInto(table as never)
        .values({ id } as never)
        .onConflict((oc) => oc.doNothing())
        .execute();
    },
  };
  return store;
}

async function agencyWithWebhook(port: number) {
  const agency = await stack.agency();
  const client = new TripService({ apiKey: agency.key, baseUrl: stack.apiUrl });
  const { webhook, secret } = await createWebhook(stack.db, {
    agencyId: agency.agencyId,
    url: `https://localhost:${port}/hooks`,
    eventTypes: ['trip.created'],
  });
  return { ...agency, client, webhook, secret };
}

/** `count` trips, a few at a time, so events and deliveries flow while the run goes on. */
async function insertTrips(agencyId: string, count: number, label: string) {
  for (let i = 0; i < count; i++) {
    await insertTrip(stack.db, agencyId, `${label} ${i}`);
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

/** Every trip.created event the API has for the agency, once `count` are recorded. */
async function allEventIds(client: TripService, count: number): Promise<string[]> {
  return waitFor(
    async () => {
      const ids = (await client.events.list({ types: ['trip.created'], limit: 1000 }).toArray()).map(
        (e) => e.id,
      );
      return ids.length >= count && ids;
    },
    { timeoutMs: 30_000, what: `${count} events recorded` },
  );
}

/** Waits until every id reached the handler, lets late redeliveries and polls come, then checks. */
async function expectExactlyOnce(r: Receiver, ids: string[]) {
  await waitFor(() => ids.every((id) => r.calls.has(id)), {
    timeoutMs: 30_000,
    what: `all ${ids.length} events handled (${r.calls.size} so far)`,
  });
  // The dispatcher retries a refused delivery after 1 s and 2 s: wait them out, and some polls.
  await new Promise((resolve) => setTimeout(resolve, 3_500));
  const twice = [...r.calls].filter(([, n]) => n !== 1);
  expect(twice).toEqual([]);
  expect([...r.calls.keys()].sort()).toEqual([...ids].sort());
}

test('a receiver down for part of a run of 300 events: every event reaches the handler exactly once', async () => {
  const port = await freePort();
  const agency = await agencyWithWebhook(port);
  const dedupe = postgresDedupe('stream_test_seen');
  await dedupe.create();
  const r = receiver(port, agency.client, agency.secret, join(dir, 'down.cursor'));
  await r.online(dedupe);

  await insertTrips(agency.agencyId, 100, 'before');
  await waitFor(() => r.calls.size >= 50, { timeoutMs: 20_000, what: 'the first events handled' });
  const webhookBefore = r.sources.webhook;
  expect(webhookBefore).toBeGreaterThan(0);

  // The receiver goes down: deliveries are refused and retried, the cursor stands still.
  await r.offline();
  const handledWhileUp = r.calls.size;
  await insertTrips(agency.agencyId, 100, 'while down');
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(r.calls.size).toBe(handledWhileUp);

  // Back up as a new process would be: a new stream, the same cursor file and dedupe table.
  await r.online(dedupe);
  await insertTrips(agency.agencyId, 100, 'after');
  const ids = await allEventIds(agency.client, 300);
  expect(ids).toHaveLength(300);
  await expectExactlyOnce(r, ids);
  // Both ways brought events: the cursor caught up what the webhooks missed.
  expect(r.sources.webhook).toBeGreaterThan(0);
  expect(r.sources.cursor).toBeGreaterThan(0);
  // And events came both ways: the store turned the second arrival away.
  expect(dedupe.hits).toBeGreaterThan(0);
  console.log(
    `handled ${r.calls.size} events: ${r.sources.webhook} by webhook, ${r.sources.cursor} by cursor; ${dedupe.hits} arrivals of an event already handled`,
  );
}, 120_000);

test('a webhook switched off mid-run: the cursor brings the rest, each event once (in-memory dedupe)', async () => {
  const port = await freePort();
  const agency = await agencyWithWebhook(port);
  const r = receiver(port, agency.client, agency.secret, join(dir, 'off.cursor'));
  await r.online(memoryDedupe({ max: 1_000 }));
  await insertTrips(agency.agencyId, 100, 'on');
  await waitFor(() => r.sources.webhook > 0, { timeoutMs: 20_000, what: 'a first delivery' });
  await setWebhookEnabled(stack.db, agency.webhook.id, false);
  const byWebhook = r.sources.webhook;
  await insertTrips(agency.agencyId, 150, 'off');
  const ids = await allEventIds(agency.client, 250);
  await expectExactlyOnce(r, ids);
  expect(r.sources.cursor).toBeGreaterThanOrEqual(150 - (r.sources.webhook - byWebhook));
  await r.offline();
}, 120_000);

test('deliveries are verified; a stopped stream answers 503; bad options get a clear TypeError', async () => {
  const client = new TripService({ apiKey: (await stack.agency()).key, baseUrl: stack.apiUrl });
  const handled: string[] = [];
  const stream = createEventStream({
    client,
    secrets: 'whsec_stream',
    cursorStore: fileCursorStore(join(dir, 'unused.cursor')),
    handler: (event) => void handled.push(event.id),
  });
  const server = createServer(
    { key: stack.ca!.key, cert: stack.ca!.cert },
    (req, res) => void stream.webhookHandler(req, res),
  );
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `https://localhost:${(server.address() as { port: number }).port}/`;
  const event: Event = {
    object: 'event',
    id: 'evt_stream0000000001',
    type: 'trip.created',
    created_at: new Date().toISOString(),
    related_object: { type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' },
    data: {},
  };
  const post = async (secret: string) => {
    const { body, headers } = signWebhookForTest(event, secret);
    const agent = new Agent({ ca: stack.ca!.ca });
    return new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end(body);
    }).finally(() => agent.destroy());
  };
  expect(await post('whsec_wrong')).toBe(400);
  expect(await post('whsec_stream')).toBe(200);
  expect(await post('whsec_stream')).toBe(200); // the service sent it again: answered, not handled
  expect(handled).toEqual([event.id]);
  await stream.stop();
  expect(await post('whsec_stream')).toBe(503);

  const base = { client, secrets: 's', cursorStore: fileCursorStore(join(dir, 'x')), handler: () => {} };
  expect(() => createEventStream({ ...base, client: {} as never })).toThrow(/client must be a TripService/);
  expect(() => createEventStream({ ...base, handler: undefined as never })).toThrow(
    /handler must be a function/,
  );
  expect(() => createEventStream({ ...base, cursorStore: undefined as never })).toThrow(
    /cursorStore needs load/,
  );
  expect(() => createEventStream({ ...base, dedupe: {} as never })).toThrow(/dedupe needs has\(id\) and add/);
  expect(() => createEventStream({ ...base, secrets: undefined as never })).toThrow(/secrets/);
  expect(() => memoryDedupe({ max: 0 })).toThrow(/max must be/);
});
