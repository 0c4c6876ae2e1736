import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import type { Recorder } from '../src/recorder.ts';
import { drain, eventsAfter, handRecorder, hostWrite, maxSeq, type SeenEvent } from './helpers.ts';

// Every row of interface.md section 6 (and D5/D6), driven by plain SQL as the host application
// writes it. Groups are due 1 ms after a change here, so *.updated shows up in the same drain;
// grouping itself is tested in grouping.test.ts.

let t: TestDatabase;
let recorder: Recorder;
let n = 0;
beforeAll(async () => {
  t = await createTestDatabase();
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_A', 'Fairway Tours')`);
  recorder = handRecorder(t.db);
});
afterAll(() => t.drop());

const TRIP = (extra = '') =>
  `INSERT INTO trips (id, agency_id, title, num_days${extra ? ', ' + extra.split('=')[0] : ''}) VALUES ('$T', 'agy_A', 'Algarve', 7${extra ? ', ' + extra.split('=')[1] : ''})`;
const TEMPLATE = `INSERT INTO trips (id, agency_id, title, num_days, is_template) VALUES ('$T', 'agy_A', 'Template', 7, true)`;
const PAYMENT = (visibility: string) =>
  `INSERT INTO payments (id, agency_id, trip_id, description, amount, currency, visibility) VALUES ('$P', 'agy_A', '$T', 'Deposit', 50000, 'EUR', '${visibility}')`;
const LINK = `INSERT INTO trip_contacts (agency_id, trip_id, contact_id) VALUES ('agy_A', '$T', '$C')`;
const CONTACT = `INSERT INTO contacts (id, agency_id, first_name, last_name) VALUES ('$C', 'agy_A', 'Ada', 'Lovelace')`;
/** A second trip ($X), or a second template, for parts that move between the two. */
const OTHER_TRIP = `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('$X', 'agy_A', 'Douro', 5)`;
const OTHER_TEMPLATE = `INSERT INTO trips (id, agency_id, title, num_days, is_template) VALUES ('$X', 'agy_A', 'Template', 5, true)`;
const OPTION = `INSERT INTO trip_options (trip_id, name) VALUES ('$T', 'Golf')`;

type Expected = [type: string, object: 'T' | 'X' | 'P' | 'C', data?: Record<string, unknown>];

// [what, setup (committed and recorded first), change under test, events it must make]
const CASES: [string, string[], string, Expected[]][] = [
  // trip.created
  ['a trip is created', [], TRIP(), [['trip.created', 'T']]],
  ['a template is created', [], TEMPLATE, []],
  [
    'a template turned into a trip',
    [TEMPLATE],
    `UPDATE trips SET is_template = false WHERE id = '$T'`,
    [['trip.created', 'T']],
  ],
  // trip.status_changed
  [
    'the status changes',
    [TRIP()],
    `UPDATE trips SET status = 'planning' WHERE id = '$T'`,
    [['trip.status_changed', 'T', { from: 'proposal', to: 'planning' }]],
  ],
  ['a template status changes', [TEMPLATE], `UPDATE trips SET status = 'planning' WHERE id = '$T'`, []],
  // trip.accepted
  [
    'the client accepts',
    [TRIP()],
    `UPDATE trips SET accepted_at = now() WHERE id = '$T'`,
    [['trip.accepted', 'T']],
  ],
  // trip.published / trip.unpublished
  [
    'the client page goes live',
    [TRIP()],
    `UPDATE trips SET client_page_published = true, client_page_url = 'https://p.example/$T' WHERE id = '$T'`,
    [['trip.published', 'T']],
  ],
  [
    'the client page is withdrawn',
    [TRIP("client_page_published, client_page_url=true, 'https://p.example/x'")],
    `UPDATE trips SET client_page_published = false, client_page_url = null WHERE id = '$T'`,
    [['trip.unpublished', 'T']],
  ],
  // trip.updated
  [
    'the title changes',
    [TRIP()],
    `UPDATE trips SET title = 'Algarve in May' WHERE id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'the dates change',
    [TRIP()],
    `UPDATE trips SET start_date = '2027-05-01', end_date = '2027-05-07' WHERE id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'the travellers change',
    [TRIP()],
    `UPDATE trips SET golfers = 8 WHERE id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'the destination changes',
    [TRIP()],
    `UPDATE trips SET region = 'Algarve', base_camp = 'Vilamoura' WHERE id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'the page texts change',
    [TRIP()],
    `UPDATE trips SET client_page_headline = 'Sun', client_page_message = 'See you' WHERE id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'an itinerary is added',
    [TRIP()],
    `INSERT INTO itineraries (trip_id, non_golfers) VALUES ('$T', 2)`,
    [['trip.updated', 'T']],
  ],
  [
    'the itinerary changes (non-golfers)',
    [TRIP(), `INSERT INTO itineraries (trip_id) VALUES ('$T')`],
    `UPDATE itineraries SET non_golfers = 3 WHERE trip_id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'the itinerary is removed',
    [TRIP(), `INSERT INTO itineraries (trip_id) VALUES ('$T')`],
    `DELETE FROM itineraries WHERE trip_id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'an option is added',
    [TRIP()],
    `INSERT INTO trip_options (trip_id, name) VALUES ('$T', 'Golf')`,
    [['trip.updated', 'T']],
  ],
  [
    'an option changes',
    [TRIP(), `INSERT INTO trip_options (trip_id, name) VALUES ('$T', 'Golf')`],
    `UPDATE trip_options SET price_amount = 1200 WHERE trip_id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'an option is removed',
    [TRIP(), `INSERT INTO trip_options (trip_id, name) VALUES ('$T', 'Golf')`],
    `DELETE FROM trip_options WHERE trip_id = '$T'`,
    [['trip.updated', 'T']],
  ],
  ["a template's itinerary changes", [TEMPLATE], `INSERT INTO itineraries (trip_id) VALUES ('$T')`, []],
  [
    'only updated_at changes',
    [TRIP()],
    `UPDATE trips SET updated_at = now() - interval '1 day' WHERE id = '$T'`,
    [],
  ],
  ['an update changes nothing', [TRIP()], `UPDATE trips SET title = title WHERE id = '$T'`, []],
  // trip.deleted
  ['a trip is deleted', [TRIP()], `DELETE FROM trips WHERE id = '$T'`, [['trip.deleted', 'T']]],
  [
    'a trip with an itinerary and options is deleted',
    [
      TRIP(),
      `INSERT INTO itineraries (trip_id) VALUES ('$T'); INSERT INTO trip_options (trip_id, name) VALUES ('$T', 'Golf')`,
    ],
    `DELETE FROM trips WHERE id = '$T'`,
    [['trip.deleted', 'T']],
  ],
  [
    'a trip turned into a template',
    [TRIP()],
    `UPDATE trips SET is_template = true WHERE id = '$T'`,
    [['trip.deleted', 'T']],
  ],
  ['a template is deleted', [TEMPLATE], `DELETE FROM trips WHERE id = '$T'`, []],
  [
    'a trip with a shown payment and a contact is deleted',
    [TRIP(), PAYMENT('shown'), CONTACT, LINK],
    `DELETE FROM trips WHERE id = '$T'`,
    [
      ['trip.deleted', 'T'],
      ['payment.deleted', 'P'],
      ['contact.updated', 'C'],
    ],
  ],
  // A template's parts make no events (D5), also when they go with it: the template row is gone
  // by the time the cascade deletes them, so the trigger can no longer read its flag there.
  [
    'a template with a shown payment and a contact is deleted',
    [TEMPLATE, PAYMENT('shown'), CONTACT, LINK],
    `DELETE FROM trips WHERE id = '$T'`,
    [],
  ],
  [
    'a template with a shown payment and a trip with a contact are deleted together',
    [TEMPLATE, PAYMENT('shown'), OTHER_TRIP, CONTACT, LINK.replace('$T', '$X')],
    `DELETE FROM trips WHERE id IN ('$T', '$X')`,
    [
      ['trip.deleted', 'X'],
      ['contact.updated', 'C'],
    ],
  ],
  [
    'a template with a shown payment and a contact turned into a trip',
    [TEMPLATE, PAYMENT('shown'), CONTACT, LINK],
    `UPDATE trips SET is_template = false WHERE id = '$T'`,
    [['trip.created', 'T']],
  ],
  [
    'a trip with a shown payment and a contact turned into a template',
    [TRIP(), PAYMENT('shown'), CONTACT, LINK],
    `UPDATE trips SET is_template = true WHERE id = '$T'`,
    [['trip.deleted', 'T']],
  ],
  // A part moving between a trip and a template: each side is judged by its own trip.
  [
    'an option moves from a trip to a template',
    [TRIP(), OTHER_TEMPLATE, OPTION],
    `UPDATE trip_options SET trip_id = '$X' WHERE trip_id = '$T'`,
    [['trip.updated', 'T']],
  ],
  [
    'an option moves from a template to a trip',
    [TEMPLATE, OTHER_TRIP, OPTION],
    `UPDATE trip_options SET trip_id = '$X' WHERE trip_id = '$T'`,
    [['trip.updated', 'X']],
  ],
  [
    'a shown payment moves from a template to a trip',
    [TEMPLATE, OTHER_TRIP, PAYMENT('shown')],
    `UPDATE payments SET trip_id = '$X' WHERE id = '$P'`,
    [['payment.created', 'P']],
  ],
  [
    'a shown payment moves from a trip to a template',
    [TRIP(), OTHER_TEMPLATE, PAYMENT('shown')],
    `UPDATE payments SET trip_id = '$X' WHERE id = '$P'`,
    [['payment.deleted', 'P']],
  ],
  [
    "a contact's link moves from a trip to a template",
    [TRIP(), OTHER_TEMPLATE, CONTACT, LINK],
    `UPDATE trip_contacts SET trip_id = '$X' WHERE contact_id = '$C'`,
    [['contact.updated', 'C']],
  ],
  // one change, several events (D6)
  [
    'one update changes status, acceptance and title',
    [TRIP()],
    `UPDATE trips SET status = 'confirmed', accepted_at = now(), title = 'Booked' WHERE id = '$T'`,
    [
      ['trip.status_changed', 'T', { from: 'proposal', to: 'confirmed' }],
      ['trip.accepted', 'T'],
      ['trip.updated', 'T'],
    ],
  ],
  // payment.created
  ['a draft payment is made', [TRIP()], PAYMENT('draft'), []],
  ['a payment is made shown', [TRIP()], PAYMENT('shown'), [['payment.created', 'P']]],
  [
    'a draft is shown to the client',
    [TRIP(), PAYMENT('draft')],
    `UPDATE payments SET visibility = 'shown' WHERE id = '$P'`,
    [['payment.created', 'P']],
  ],
  // payment.paid
  [
    'a payment is paid in full',
    [TRIP(), PAYMENT('shown')],
    `UPDATE payments SET amount_paid = amount, paid_at = now() WHERE id = '$P'`,
    [['payment.paid', 'P']],
  ],
  // payment.updated
  [
    'a shown payment changes',
    [TRIP(), PAYMENT('shown')],
    `UPDATE payments SET due_date = '2027-04-01' WHERE id = '$P'`,
    [['payment.updated', 'P']],
  ],
  [
    'a shown payment is paid in part',
    [TRIP(), PAYMENT('shown')],
    `UPDATE payments SET amount_paid = 100 WHERE id = '$P'`,
    [['payment.updated', 'P']],
  ],
  ['a draft changes', [TRIP(), PAYMENT('draft')], `UPDATE payments SET amount = 60000 WHERE id = '$P'`, []],
  // payment.deleted
  [
    'a shown payment is cancelled',
    [TRIP(), PAYMENT('shown')],
    `UPDATE payments SET cancelled_at = now() WHERE id = '$P'`,
    [['payment.deleted', 'P']],
  ],
  [
    'a shown payment is deleted',
    [TRIP(), PAYMENT('shown')],
    `DELETE FROM payments WHERE id = '$P'`,
    [['payment.deleted', 'P']],
  ],
  ['a draft is deleted', [TRIP(), PAYMENT('draft')], `DELETE FROM payments WHERE id = '$P'`, []],
  // contacts
  ['a contact is created', [], CONTACT, [['contact.created', 'C']]],
  [
    'a contact changes',
    [CONTACT],
    `UPDATE contacts SET email = 'ada@example.com' WHERE id = '$C'`,
    [['contact.updated', 'C']],
  ],
  ['a contact joins a trip', [TRIP(), CONTACT], LINK, [['contact.updated', 'C']]],
  [
    'a contact leaves a trip',
    [TRIP(), CONTACT, LINK],
    `DELETE FROM trip_contacts WHERE contact_id = '$C'`,
    [['contact.updated', 'C']],
  ],
  ['a contact joins a template', [TEMPLATE, CONTACT], LINK, []],
  [
    "a contact's updated_at alone changes",
    [CONTACT],
    `UPDATE contacts SET updated_at = now() WHERE id = '$C'`,
    [],
  ],
  ['a contact is deleted', [CONTACT], `DELETE FROM contacts WHERE id = '$C'`, [['contact.deleted', 'C']]],
  [
    'a contact on a trip is deleted',
    [TRIP(), CONTACT, LINK],
    `DELETE FROM contacts WHERE id = '$C'`,
    [['contact.deleted', 'C']],
  ],
];

test.each(CASES)('%s', async (_what, setup, change, expected) => {
  n++;
  const ids = { T: `trp_case${n}`, X: `trp_case${n}x`, P: `pay_case${n}`, C: `con_case${n}` };
  const fill = (s: string) =>
    s.replaceAll('$T', ids.T).replaceAll('$X', ids.X).replaceAll('$P', ids.P).replaceAll('$C', ids.C);
  for (const statement of setup) await hostWrite(t.db, fill(statement));
  await drain(recorder);
  const before = await maxSeq(t.db);

  await hostWrite(t.db, fill(change));
  await new Promise((resolve) => setTimeout(resolve, 5)); // let the 1 ms groups fall due
  await drain(recorder);

  const want: SeenEvent[] = expected.map(([type, object, data]) => ({
    type,
    object: `${type.split('.')[0]}:${ids[object]}`,
    data: data ?? {},
  }));
  expect(await eventsAfter(t.db, before)).toEqual(want);
});

test('a rolled-back write leaves nothing', async () => {
  await hostWrite(t.db, TRIP().replaceAll('$T', 'trp_rollback'));
  await drain(recorder);
  const before = await maxSeq(t.db);
  await expect(
    hostWrite(t.db, `UPDATE trips SET status = 'planning' WHERE id = 'trp_rollback'; SELECT 1/0`),
  ).rejects.toThrow(/division by zero/);
  expect(await t.db.selectFrom('outbox').selectAll().execute()).toEqual([]);
  await drain(recorder);
  expect(await eventsAfter(t.db, before)).toEqual([]);
});

test('every event type of the contracts catalogue is made by some case above', async () => {
  const { EVENT_TYPE_NAMES } = await import('@trips/contracts');
  const made = new Set(CASES.flatMap(([, , , expected]) => expected.map(([type]) => type)));
  expect([...made].sort()).toEqual([...EVENT_TYPE_NAMES].sort());
});
