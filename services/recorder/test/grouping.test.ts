import { createDb } from '@trips/db';
import { createTestDatabase, waitFor, type TestDatabase } from '@trips/testkit';
import { Recorder } from '../src/recorder.ts';
import { drain, hostWrite, silent, sleep } from './helpers.ts';

// Grouping of *.updated (spec 6.1) in seconds: EVENT_GROUP_QUIET=1s, EVENT_GROUP_MAX=3s.
const QUIET = 1_000;
const MAX = 3_000;

let t: TestDatabase;
let recorder: Recorder;
let ticker: ReturnType<typeof setInterval>;
beforeAll(async () => {
  t = await createTestDatabase();
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_G', 'Grouping')`);
  recorder = new Recorder(
    t.db,
    { batchSize: 1000, groupQuietMs: QUIET, groupMaxMs: MAX, retentionMs: 86_400_000 },
    silent,
  );
  // What the service's loop does, every 50 ms.
  let busy = false;
  ticker = setInterval(() => {
    if (busy) return;
    busy = true;
    void drain(recorder).finally(() => (busy = false));
  }, 50);
});
afterAll(async () => {
  clearInterval(ticker);
  await sleep(100);
  await t.drop();
});

async function trip(id: string) {
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('${id}', 'agy_G', 'T', 3)`,
  );
}
const retitle = (id: string, title: string) =>
  hostWrite(t.db, `UPDATE trips SET title = '${title}' WHERE id = '${id}'`);
async function updatesOf(id: string) {
  return t.db
    .selectFrom('events')
    .select(['type', 'created_at'])
    .where('object_id', '=', id)
    .where('type', '=', 'trip.updated')
    .orderBy('seq')
    .execute();
}

test('edits close together make one trip.updated, once the trip has been quiet for EVENT_GROUP_QUIET', async () => {
  await trip('trp_quiet');
  // Taken as each edit commits, not after the pause: a busy machine oversleeps a timer by more
  // than the tolerance below.
  let lastEdit = 0;
  for (let i = 0; i < 4; i++) {
    await retitle('trp_quiet', `Edit ${i}`);
    lastEdit = Date.now();
    await sleep(150);
  }
  await sleep(QUIET - 400);
  expect(await updatesOf('trp_quiet')).toHaveLength(0);
  const [event] = await waitFor(
    async () => (await updatesOf('trp_quiet')).length > 0 && updatesOf('trp_quiet'),
    {
      what: 'trip.updated',
    },
  );
  expect(event!.created_at.getTime() - lastEdit).toBeGreaterThanOrEqual(QUIET - 50);
  expect(event!.created_at.getTime() - lastEdit).toBeLessThan(QUIET + 700);
  await sleep(QUIET + 200);
  expect(await updatesOf('trp_quiet')).toHaveLength(1);
});

test('a trip edited without pause gets trip.updated EVENT_GROUP_MAX after the first edit of the group', async () => {
  await trip('trp_busy');
  const firstEdit = Date.now();
  let i = 0;
  while (Date.now() - firstEdit < MAX + 1_500) {
    await retitle('trp_busy', `Busy ${i++}`);
    await sleep(300);
  }
  const events = await updatesOf('trp_busy');
  expect(events.length).toBeGreaterThanOrEqual(1);
  const delay = events[0]!.created_at.getTime() - firstEdit;
  expect(delay).toBeGreaterThanOrEqual(MAX - 50);
  expect(delay).toBeLessThan(MAX + 700);
});

test('a pending group is dropped when its trip is deleted', async () => {
  await trip('trp_gone');
  await retitle('trp_gone', 'About to go');
  await sleep(200);
  await hostWrite(t.db, `DELETE FROM trips WHERE id = 'trp_gone'`);
  await sleep(QUIET + 600);
  const types = await t.db
    .selectFrom('events')
    .select('type')
    .where('object_id', '=', 'trp_gone')
    .orderBy('seq')
    .execute();
  expect(types.map((e) => e.type)).toEqual(['trip.created', 'trip.deleted']);
  expect(
    await t.db.selectFrom('event_groups').selectAll().where('object_id', '=', 'trp_gone').execute(),
  ).toEqual([]);
});

test('pending groups live in Postgres and survive a restart of the recorder', async () => {
  // A second recorder with its own pool stands for the process before the restart; it records
  // the change and stops. Its successor (another pool, no shared memory) must emit the group.
  const before = createDb(t.url, { max: 1 });
  const first = new Recorder(
    before,
    { batchSize: 1000, groupQuietMs: QUIET, groupMaxMs: MAX, retentionMs: 86_400_000 },
    silent,
  );
  clearInterval(ticker);
  await sleep(100);
  await trip('trp_restart');
  await retitle('trp_restart', 'Before restart');
  await drain(first);
  await before.destroy();
  const [group] = await t.db
    .selectFrom('event_groups')
    .selectAll()
    .where('object_id', '=', 'trp_restart')
    .execute();
  expect(group).toBeDefined();
  expect(await updatesOf('trp_restart')).toHaveLength(0);
  await sleep(QUIET + 100);

  const after = createDb(t.url, { max: 1 });
  try {
    const successor = new Recorder(
      after,
      { batchSize: 1000, groupQuietMs: QUIET, groupMaxMs: MAX, retentionMs: 86_400_000 },
      silent,
    );
    await drain(successor);
    expect(await updatesOf('trp_restart')).toHaveLength(1);
  } finally {
    await after.destroy();
  }
});
