import { createHmac } from 'node:crypto';
import { eventRecord } from '@trips/contracts';
import type { CommittedChange, ReceivedRequest } from '@trips/testkit';
import {
  checkDeliveries,
  checkReader,
  checkRecording,
  checkServerErrors,
  type GroupingRules,
  type RecordedEvent,
  type WebhookUnderTest,
} from './invariants.ts';

// The system test's invariants catch what they exist for: each broken input below is one way the
// system could go wrong (a lost or extra event, a group made too early or never, a delivery to
// another agency, a bad signature, a reader seeing an event twice, a 500 outside the outage).

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const RULES: GroupingRules = {
  quietMs: 2_000,
  maxMs: 5_000,
  slackMs: 500,
  lateMs: 3_000,
  outages: [],
  recoveryMs: 10_000,
};

function change(at: number, extra: Partial<CommittedChange> = {}): CommittedChange {
  return {
    agencyId: 'agy_A',
    action: 'test',
    at: new Date(T0 + at),
    events: [],
    touched: [],
    deleted: [],
    ...extra,
  };
}

let seq = 0;
function recorded(
  type: string,
  objectId: string,
  at: number,
  data: Record<string, unknown> = {},
  agency = 'agy_A',
): RecordedEvent {
  seq++;
  return {
    seq,
    id: `evt_${seq}`,
    agency_id: agency,
    type,
    object_type: type.split('.')[0] as RecordedEvent['object_type'],
    object_id: objectId,
    data,
    created_at: new Date(T0 + at),
  };
}

const trip = { type: 'trip' as const, id: 'trp_1' };

describe('changes → events', () => {
  // A trip created, then edited four times in a run, quiet, then deleted: one trip.updated.
  const changes = [
    change(0, { events: [{ type: 'trip.created', objectId: 'trp_1', data: {} }] }),
    change(100, { touched: [trip] }),
    change(400, { touched: [trip] }),
    change(700, {
      events: [
        { type: 'trip.status_changed', objectId: 'trp_1', data: { from: 'proposal', to: 'planning' } },
      ],
      touched: [trip],
    }),
    change(900, { touched: [trip] }),
    change(6_000, { events: [{ type: 'trip.deleted', objectId: 'trp_1', data: {} }], deleted: [trip] }),
  ];
  const good = () => [
    recorded('trip.created', 'trp_1', 20),
    recorded('trip.status_changed', 'trp_1', 720, { from: 'proposal', to: 'planning' }),
    recorded('trip.updated', 'trp_1', 2_950),
    recorded('trip.deleted', 'trp_1', 6_020),
  ];

  test('hold for a correct record', () => {
    const verdict = checkRecording(changes, good(), RULES);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts).toMatchObject({
      'grouped edits': 4,
      'update events': 1,
      'edits grouped into another': 3,
    });
  });

  test('a lost event, an extra one, a wrong status, events out of order', () => {
    const [created, status, updated, deleted] = good();
    expect(checkRecording(changes, [status!, updated!, deleted!], RULES).violations).toEqual([
      expect.stringContaining('1 events not recorded: trip.created trp_1'),
    ]);
    const twice = { ...deleted!, id: 'evt_again', seq: 99 };
    expect(checkRecording(changes, [...good(), twice], RULES).violations).toEqual([
      expect.stringContaining('1 events no change made: trip.deleted trp_1'),
    ]);
    const wrong = { ...status!, data: { from: 'proposal', to: 'confirmed' } };
    expect(checkRecording(changes, [created!, wrong, updated!, deleted!], RULES).violations).toHaveLength(2);
    expect(checkRecording(changes, [status!, created!, updated!, deleted!], RULES).violations).toEqual([
      expect.stringContaining('out of order'),
    ]);
  });

  test('edits not grouped: an update before the object was quiet', () => {
    const early = [...good().slice(0, 2), recorded('trip.updated', 'trp_1', 450), ...good().slice(2)];
    expect(checkRecording(changes, early, RULES).violations).toEqual([
      expect.stringContaining('before its group was due'),
    ]);
  });

  test('an update never made, one made from nothing, one far too late', () => {
    const [created, status, , deleted] = good();
    expect(checkRecording(changes, [created!, status!, deleted!], RULES).violations).toEqual([
      expect.stringContaining('made no update event, though its group was due before the deletion'),
      expect.stringContaining('made no update event'),
      expect.stringContaining('made no update event'),
      expect.stringContaining('made no update event'),
    ]);
    const stray = recorded('trip.updated', 'trp_2', 3_000);
    expect(checkRecording(changes, [...good(), stray], RULES).violations).toEqual([
      expect.stringContaining(
        'trip:trp_2: an update event at 2026-11-21T10:00:03.000Z with no change before it',
      ),
    ]);
    const lateChanges = changes.slice(0, 5);
    const late = [created!, status!, recorded('trip.updated', 'trp_1', 9_000)];
    expect(checkRecording(lateChanges, late, RULES).violations).toEqual([
      expect.stringContaining('came too late'),
    ]);
    // …unless the recorders could not work then: late by the outage is on time.
    const outage = { ...RULES, outages: [{ from: T0 + 1_000, to: T0 + 4_000 }] };
    expect(checkRecording(lateChanges, late, outage).violations).toEqual([]);
  });

  test('a deletion while the group is pending drops it (D6)', () => {
    const quickDelete = [
      ...changes.slice(0, 5),
      change(1_500, { events: [{ type: 'trip.deleted', objectId: 'trp_1', data: {} }], deleted: [trip] }),
    ];
    const [created, status] = good();
    const events = [created!, status!, recorded('trip.deleted', 'trp_1', 1_520)];
    expect(checkRecording(quickDelete, events, RULES).violations).toEqual([]);
  });

  test('a deletion committed as a due group is recorded may miss that batch; one well before it may not', () => {
    const [created, status] = good();
    const deletedAt = (at: number) => [
      ...changes.slice(0, 5),
      change(at, { events: [{ type: 'trip.deleted', objectId: 'trp_1', data: {} }], deleted: [trip] }),
    ];
    // Due at 2,900; the deletion commits at 2,940, within the slack of the update's batch at 2,950.
    const raced = [
      created!,
      status!,
      recorded('trip.updated', 'trp_1', 2_950),
      recorded('trip.deleted', 'trp_1', 2_960),
    ];
    expect(checkRecording(deletedAt(2_940), raced, RULES).violations).toEqual([]);
    // Deleted at 1,500, before the group was due: an update at 2,950 is made from nothing.
    const stale = [
      created!,
      status!,
      recorded('trip.deleted', 'trp_1', 1_520),
      recorded('trip.updated', 'trp_1', 2_950),
    ];
    expect(checkRecording(deletedAt(1_500), stale, RULES).violations).toEqual([
      expect.stringContaining(
        'trip:trp_1: an update event at 2026-11-21T10:00:02.950Z with no change before it',
      ),
    ]);
  });
});

describe('webhooks', () => {
  const secret = 'whsec_test';
  const events = [recorded('trip.created', 'trp_1', 0), recorded('trip.created', 'trp_9', 0, {}, 'agy_B')];
  function request(event: RecordedEvent, key = secret): ReceivedRequest {
    const body = JSON.stringify(eventRecord(event));
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', key).update(`${t}.${body}`).digest('hex');
    return {
      method: 'POST',
      path: '/hooks',
      headers: {
        'service-signature': `t=${t},v1=${v1}`,
        'service-event-id': event.id,
        'service-event-type': event.type,
      },
      body,
      at: Date.now(),
    };
  }
  const webhook = (requests: WebhookUnderTest['requests']): WebhookUnderTest => ({
    name: 'A ok',
    id: 'whk_1',
    agencyId: 'agy_A',
    eventTypes: ['trip.created'],
    secret,
    active: true,
    requests,
  });

  test('hold when each event arrived signed, duplicates allowed', () => {
    const r = request(events[0]!);
    const verdict = checkDeliveries(
      [
        webhook([
          { request: r, delivered: true },
          { request: r, delivered: true },
        ]),
      ],
      events,
      0,
    );
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts['A ok: duplicate deliveries']).toBe(1);
  });

  test('an event never delivered, a bad signature, another agency’s event', () => {
    const failedOnly = webhook([{ request: request(events[0]!), delivered: false }]);
    expect(checkDeliveries([failedOnly], events, 0).violations).toEqual([
      expect.stringContaining('1 of 1 events never delivered'),
    ]);
    const forged = webhook([{ request: request(events[0]!, 'whsec_other'), delivered: true }]);
    expect(checkDeliveries([forged], events, 0).violations).toEqual([
      expect.stringContaining('1 bad signatures'),
    ]);
    const leak = webhook([
      { request: request(events[0]!), delivered: true },
      { request: request(events[1]!), delivered: true },
    ]);
    expect(checkDeliveries([leak], events, 0).violations).toEqual([
      expect.stringContaining('1 events of another agency: evt_'),
    ]);
  });

  test('nothing may arrive once a webhook is off', () => {
    const off = {
      ...webhook([{ request: request(events[0]!), delivered: false }]),
      active: false,
      offAt: Date.now() - 10_000,
    };
    expect(checkDeliveries([off], events, 1_000).violations).toEqual([
      expect.stringContaining('after it was off'),
    ]);
  });
});

describe('GET /events reader', () => {
  const events = [
    recorded('trip.created', 'trp_1', 0),
    recorded('trip.created', 'trp_2', 0),
    recorded('trip.deleted', 'trp_1', 0),
  ];
  const page = (...i: number[]) => i.map((n) => eventRecord(events[n]!) as never);

  test('holds for every event once, in order', () => {
    expect(checkReader('agy_A', page(0, 1, 2), events).violations).toEqual([]);
  });

  test('an event twice, one missed, out of cursor order', () => {
    expect(checkReader('agy_A', page(0, 1, 1, 2), events).violations).toEqual([
      expect.stringContaining('1 seen twice'),
      expect.stringContaining('out of cursor order'),
    ]);
    expect(checkReader('agy_A', page(0, 2), events).violations).toEqual([
      expect.stringContaining('1 never seen'),
    ]);
    expect(checkReader('agy_A', page(1, 0, 2), events).violations).toEqual([
      expect.stringContaining('out of cursor order'),
    ]);
  });
});

test('a 500 outside the Postgres outage is a violation; inside, it is counted', () => {
  const line = (time: number, status: number) =>
    JSON.stringify({ level: 30, time, msg: 'request', status, path: '/api/v1/events', requestId: 'req_1' });
  const log = [line(T0, 200), line(T0 + 1_500, 500), line(T0 + 9_000, 500)].join('\n');
  const verdict = checkServerErrors([log], [{ from: T0 + 1_000, to: T0 + 2_000 }], 1_000);
  expect(verdict.violations).toEqual([expect.stringContaining('1 answers 5xx outside the outage')]);
  expect(verdict.counts).toEqual({ 'API requests': 3, '5xx in the outage': 1, '5xx outside it': 1 });
});
