import { createAgency } from '@trips/db/agencies';
import { createActivity, createTestDatabase, type TestDatabase } from '@trips/testkit';
import { drain, handRecorder } from '../../services/recorder/test/helpers.ts';

// The activity generator's account of what each change must make (written from the spec) agrees
// with the recorder, change by change, so the system test's expectations are the spec's and not
// a misreading of it. Groups fall due 1 ms after a change here, so every edit makes its own event.

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const key = (type: string, id: string, data: Record<string, unknown>) =>
  `${type} ${id} ${JSON.stringify(Object.entries(data).sort())}`;

test('each change makes exactly the events the activity says, and a day makes all 14 types', async () => {
  const { id: agencyId } = await createAgency(t.db, { name: 'Fairway Golf Travel' });
  const activity = createActivity(t.db, { agencyId, seed: 7 });
  const recorder = handRecorder(t.db);
  let seen = 0;
  for (let i = 0; i < 300; i++) {
    const change = await activity.step();
    await new Promise((resolve) => setTimeout(resolve, 2)); // let the 1 ms groups fall due
    await drain(recorder);
    const events = await t.db
      .selectFrom('events')
      .select(['type', 'object_id', 'data'])
      .where('agency_id', '=', agencyId)
      .orderBy('seq')
      .execute();
    const made = events.slice(seen).map((e) => key(e.type, e.object_id, e.data));
    seen = events.length;
    const expected = [
      ...change.events.map((e) => key(e.type, e.objectId, e.data)),
      ...change.touched.map((o) => key(`${o.type}.updated`, o.id, {})),
    ];
    expect({ step: i, action: change.action, events: made.sort() }).toEqual({
      step: i,
      action: change.action,
      events: expected.sort(),
    });
  }
  const types = await t.db.selectFrom('events').select('type').distinct().execute();
  expect(types).toHaveLength(14);
  const actions = new Set(activity.committed.map((c) => c.action));
  for (const action of [
    'template.convert',
    'trip.to_template',
    'trip.delete',
    'payment.refund',
    'contact.leave',
  ])
    expect(actions.has(action)).toBe(true);
}, 60_000);
