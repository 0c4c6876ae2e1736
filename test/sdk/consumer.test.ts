import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@trips/testkit';
import {
  fileCursorStore,
  TripService,
  type CursorExpired,
  type Event,
} from '../../packages/sdk/src/index.ts';
import { insertTrip, startStack, type Stack } from './stack.ts';

// The cursor consumer (issue 25, item 5) against the real API and recorder: cursor order, at least
// once, the cursor saved only after the handler succeeded, a failing handler retried and never
// skipped, a restart resuming from the file, and a 410 cursor_expired (EVENT_RETENTION of a few
// seconds) handed to onCursorExpired, after which it goes on without losing a change.

const RETENTION_MS = 3_000;
let stack: Stack;
let client: TripService;
let agencyId: string;
let dir: string;

beforeAll(async () => {
  stack = await startStack({ env: { EVENT_RETENTION: `${RETENTION_MS}ms` } });
  const agency = await stack.agency();
  agencyId = agency.agencyId;
  client = new TripService({ apiKey: agency.key, baseUrl: stack.apiUrl });
  dir = await mkdtemp(join(tmpdir(), 'trips-consumer-'));
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await stack?.stop();
}, 30_000);

interface Run {
  seen: Event[];
  errors: string[];
  stop(): Promise<void>;
}

function run(path: string, handler?: (event: Event, attempt: number) => void, extra: object = {}): Run {
  const controller = new AbortController();
  const seen: Event[] = [];
  const errors: string[] = [];
  const done = client.events.consume({
    cursorStore: fileCursorStore(path),
    types: ['trip.created'],
    signal: controller.signal,
    pollIntervalMs: 100,
    retry: { baseMs: 50, capMs: 200 },
    handler: (event, { attempt }) => {
      handler?.(event, attempt);
      seen.push(event);
    },
    onError: (error) => errors.push((error as Error).message),
    ...extra,
  });
  return {
    seen,
    errors,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

const titles = (events: Event[], ids: Map<string, string>) => events.map((e) => ids.get(e.related_object.id));

test('in order, at least once, a failing handler retried, the cursor saved after success; a restart resumes', async () => {
  const path = join(dir, 'a', 'events.cursor');
  const store = fileCursorStore(path);
  const ids = new Map<string, string>();
  for (const title of ['one', 'two', 'three', 'four', 'five'])
    ids.set(await insertTrip(stack.db, agencyId, title), title);
  let failures = 0;
  const first = run(path, (event, attempt) => {
    if (ids.get(event.related_object.id) === 'three' && attempt <= 2) {
      failures++;
      throw new Error('the database of the agency is down');
    }
  });
  await waitFor(() => first.seen.length >= 5, { what: 'five events handled' });
  expect(titles(first.seen, ids)).toEqual(['one', 'two', 'three', 'four', 'five']);
  expect(failures).toBe(2);
  expect(first.errors).toEqual(['the database of the agency is down', 'the database of the agency is down']);
  const saved = await waitFor(() => store.load(), { what: 'the cursor saved' });
  await first.stop();

  // A new consumer on the same file starts after what was handled.
  ids.set(await insertTrip(stack.db, agencyId, 'six'), 'six');
  const second = run(path);
  await waitFor(() => second.seen.length >= 1, { what: 'the sixth event' });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await second.stop();
  expect(titles(second.seen, ids)).toEqual(['six']);
  expect(await store.load()).not.toBe(saved);
  expect((await readFile(path, 'utf8')).trim()).toBe(await store.load());
});

test('the cursor does not move while the handler fails', async () => {
  const path = join(dir, 'b.cursor');
  const store = fileCursorStore(path);
  const before = await waitFor(() => client.events.currentCursor({ types: ['trip.created'] }));
  await store.save(before);
  const id = await insertTrip(stack.db, agencyId, 'stuck');
  const stuck = run(path, (event) => {
    if (event.related_object.id === id) throw new Error('not yet');
  });
  await waitFor(() => stuck.errors.length >= 3, { what: 'three failed attempts' });
  expect(await store.load()).toBe(before);
  await stuck.stop();
  expect(stuck.seen).toEqual([]);
  expect(await store.load()).toBe(before);
});

test('410 cursor_expired goes to onCursorExpired, and the consumer goes on with no change lost', async () => {
  const path = join(dir, 'c.cursor');
  const store = fileCursorStore(path);
  await store.save(await client.events.currentCursor());
  await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 500)); // the cursor ages out
  const resynced: string[] = [];
  const expired: CursorExpired[] = [];
  let duringResync = '';
  const consumer = run(path, undefined, {
    onCursorExpired: async (info: CursorExpired) => {
      expired.push(info);
      for await (const trip of client.trips.list()) resynced.push(trip.id);
      duringResync = await insertTrip(stack.db, agencyId, 'made during the resync');
    },
  });
  await waitFor(() => consumer.seen.some((e) => e.related_object.id === duringResync), {
    what: 'the event of the trip made during the resync',
  });
  await consumer.stop();
  expect(expired).toHaveLength(1);
  expect(expired[0]!.error).toMatchObject({ status: 410, code: 'cursor_expired' });
  expect(resynced.length).toBeGreaterThanOrEqual(6);
  expect(await store.load()).not.toBe(expired[0]!.resumeCursor); // it moved on past the resync
});

test('without onCursorExpired a 410 rejects: nothing is skipped silently', async () => {
  const path = join(dir, 'd.cursor');
  await fileCursorStore(path).save(await client.events.currentCursor());
  await new Promise((resolve) => setTimeout(resolve, RETENTION_MS + 500));
  await expect(
    client.events.consume({ cursorStore: fileCursorStore(path), handler: () => {}, pollIntervalMs: 100 }),
  ).rejects.toMatchObject({ code: 'cursor_expired' });
});

test('bad options are refused with a clear message', async () => {
  await expect(client.events.consume({} as never)).rejects.toThrow(/handler must be a function/);
  await expect(client.events.consume({ handler: () => {}, cursorStore: {} } as never)).rejects.toThrow(
    /load\(\) and save/,
  );
});
