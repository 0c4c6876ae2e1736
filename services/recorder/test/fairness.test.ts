import { sql } from 'kysely';
import { createAgency } from '@trips/db/agencies';
import { claimOutbox } from '@trips/db/outbox';
import { createActivity, createTestDatabase, type CommittedChange, type TestDatabase } from '@trips/testkit';
import { checkRecording, type RecordedEvent } from '../../../test/system/invariants.ts';
import { drain, handRecorder, hostWrite } from './helpers.ts';

// The recorder claims the outbox round-robin across agencies (claimOutbox, issue 23): one agency's
// bulk import no longer holds another agency's changes back, and each agency's changes, so each
// object's, are still recorded in the order they were made.

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

test("one batch takes another agency's change from behind a bulk import", async () => {
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_bulk', 'Bulk'), ('agy_one', 'One')`);
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days)
     SELECT 'trp_bulk' || i, 'agy_bulk', 'Imported', 3 FROM generate_series(1, 5000) i`,
  );
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_one', 'agy_one', 'Single', 3)`,
  );

  const { changes, events } = await handRecorder(t.db, { batchSize: 100 }).runBatch();

  expect(changes).toBe(100);
  const made = events.map((e) => `${e.type} ${e.object_id}`);
  expect(made).toContain('trip.created trp_one');
  // The bulk importer's share is the oldest of its changes, in the order they were made.
  expect(made.filter((e) => e !== 'trip.created trp_one')).toEqual(
    Array.from({ length: 99 }, (_, i) => `trip.created trp_bulk${i + 1}`),
  );
  await drain(handRecorder(t.db));
});

test("the claim leaves the transaction's planner settings as they were", async () => {
  await drain(handRecorder(t.db));
  // Two changes for a claim of one: the walk (a queue shorter than the claim skips it).
  await hostWrite(t.db, `UPDATE trips SET title = 'Renamed' WHERE id IN ('trp_one', 'trp_bulk1')`);
  const settings = sql<{ s: string }>`
    SELECT concat_ws(' ', current_setting('jit'), current_setting('enable_seqscan'),
                     current_setting('enable_bitmapscan')) AS s`;
  const before = (await settings.execute(t.db)).rows[0]!.s;
  const after = await t.db.transaction().execute(async (trx) => {
    expect(await claimOutbox(trx, 1)).toHaveLength(1);
    return (await settings.execute(trx)).rows[0]!.s;
  });
  expect(after).toBe(before);
  await drain(handRecorder(t.db));
});

test('a queue shorter than the claim is taken whole, in the order the walk gives', async () => {
  await drain(handRecorder(t.db));
  // Queue order: bulk, bulk, one, bulk, one, bulk.
  for (const id of ['trp_bulk1', 'trp_bulk2', 'trp_one', 'trp_bulk3', 'trp_one', 'trp_bulk4'])
    await hostWrite(t.db, `UPDATE trips SET num_days = num_days + 1 WHERE id = '${id}'`);
  const taken = (limit: number) =>
    t.db.transaction().execute(async (trx) => (await claimOutbox(trx, limit)).map((row) => row.id));
  const whole = await taken(6);
  const walked = await taken(5);
  expect(whole).toHaveLength(6);
  expect(walked).toEqual(whole.slice(0, 5));
  const agencyOf = new Map(
    (await t.db.selectFrom('outbox').select(['id', 'agency_id']).execute()).map((r) => [r.id, r.agency_id]),
  );
  expect(whole.map((id) => agencyOf.get(id))).toEqual([
    'agy_bulk',
    'agy_one',
    'agy_bulk',
    'agy_one',
    'agy_bulk',
    'agy_bulk',
  ]);
  await drain(handRecorder(t.db));
});

test("two agencies at work behind a bulk import, small batches: each agency's events in the order of its changes", async () => {
  // The system test's check of immediate events (test/system/invariants.ts): per agency, exactly
  // the events its changes require, each change's after the previous change's. Grouped events are
  // left out: their timing rules assume a recorder that keeps up, and this one lags on purpose.
  const agencies = await Promise.all(
    ['Fairway Golf Travel', 'Links Abroad'].map((name) => createAgency(t.db, { name })),
  );
  const [bulk, other] = agencies.map((a) => a.id) as [string, string];
  const activities = agencies.map((a, i) =>
    createActivity(t.db, { agencyId: a.id, seed: 23 + i, focus: 0.6 }),
  );
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days)
     SELECT 'trp_import' || i, '${bulk}', 'Imported', 3 FROM generate_series(1, 400) i`,
  );
  const imported: CommittedChange = {
    agencyId: bulk,
    action: 'trip.import',
    at: new Date(),
    events: Array.from({ length: 400 }, (_, i) => ({
      type: 'trip.created',
      objectId: `trp_import${i + 1}`,
      data: {},
    })),
    touched: [],
    deleted: [],
  };
  const recorder = handRecorder(t.db, { batchSize: 7 });
  for (let i = 0; i < 120; i++) {
    for (const activity of activities) await activity.step();
    await recorder.runBatch();
  }
  await drain(recorder);

  const changes = [imported, ...activities.flatMap((a) => a.committed)].map((c) => ({
    ...c,
    touched: [],
    deleted: [],
  }));
  const events = await t.db
    .selectFrom('events')
    .selectAll()
    .where('agency_id', 'in', [bulk, other])
    .where('type', 'not like', '%.updated')
    .orderBy('seq')
    .execute();
  const verdict = checkRecording(changes, events as RecordedEvent[], {
    quietMs: 1,
    maxMs: 1,
    slackMs: 0,
    lateMs: 0,
    outages: [],
    recoveryMs: 0,
  });
  expect(verdict.violations).toEqual([]);
  // The other agency's changes did not wait for the import: its first events came before the
  // import's last.
  const firstOther = events.findIndex((e) => e.agency_id === other);
  const lastImported = events.map((e) => e.object_id).lastIndexOf('trp_import400');
  expect(firstOther).toBeLessThan(lastImported);
}, 60_000);
