import type { StoredEvent } from '@trips/db/events';
import { EXPRESS_MAX_BACKLOG, quietAgencyEvents } from '../src/express.ts';

// Which events of a batch go to the express queue (express.ts): the quiet agencies', those whose
// whole backlog is in the batch and is short. The batch as takeUnpublished gives it: round-robin,
// every agency's oldest, then every second, … up to the limit.

let seq = 0;
const event = (agencyId: string): StoredEvent => ({
  seq: ++seq,
  id: `evt_${seq}`,
  agency_id: agencyId,
  type: 'trip.created',
  object_type: 'trip',
  object_id: `trp_${seq}`,
  data: {},
  created_at: new Date(),
});

/** A round-robin batch of the agencies' backlogs (agency → events waiting), cut at `limit`. */
function batchOf(backlogs: Record<string, number>, limit: number): StoredEvent[] {
  const batch: StoredEvent[] = [];
  for (let turn = 0; batch.length < limit; turn++) {
    const inTurn = Object.entries(backlogs).filter(([, n]) => n > turn);
    if (inTurn.length === 0) break;
    for (const [agency] of inTurn) if (batch.length < limit) batch.push(event(agency));
  }
  return batch;
}

const quietAgencies = (batch: StoredEvent[], limit: number) =>
  [...new Set([...quietAgencyEvents(batch, limit)].map((e) => e.agency_id))].sort();

test('a short batch holds every backlog: agencies with at most EXPRESS_MAX_BACKLOG are quiet', () => {
  const batch = batchOf({ a: 1, b: EXPRESS_MAX_BACKLOG, c: EXPRESS_MAX_BACKLOG + 1 }, 500);
  expect(quietAgencies(batch, 500)).toEqual(['a', 'b']);
  // Every event of a quiet agency goes express, none of another's.
  expect([...quietAgencyEvents(batch, 500)]).toHaveLength(1 + EXPRESS_MAX_BACKLOG);
});

test('a full batch: quiet only whom it shows to have run out, a turn before its last', () => {
  // An import (a: 5,000) and a trip of b's with three events: b ran out in the third turn, the
  // batch goes on to the sixteenth.
  expect(quietAgencies(batchOf({ a: 5_000, b: 3 }, 16), 16)).toEqual(['b']);
  // Cut in the middle of a turn: c has one fewer than a and b, but the batch ended before c's turn
  // came round, so c may have more waiting. d ran out two turns before.
  const batch = batchOf({ a: 100, b: 100, c: 100, d: 2 }, 13);
  expect(batch.filter((e) => e.agency_id === 'c')).toHaveLength(3);
  expect(batch.filter((e) => e.agency_id === 'a')).toHaveLength(4);
  expect(quietAgencies(batch, 13)).toEqual(['d']);
  // One agency alone filling the batch is never quiet, however small the batch.
  expect(quietAgencies(batchOf({ a: 100 }, 4), 4)).toEqual([]);
  // Many agencies with a backlog each, one event apiece in a full batch: none shown to be quiet.
  expect(quietAgencies(batchOf({ a: 9, b: 9, c: 9 }, 3), 3)).toEqual([]);
});
