import type { StoredEvent } from '@trips/db/events';

/**
 * The longest backlog an agency may have and still be quiet: a trip written with its itinerary,
 * payments and contacts in one transaction makes a handful of events, an import thousands.
 */
export const EXPRESS_MAX_BACKLOG = 10;

/**
 * The events of a batch that go to the dispatcher's express queue: those of quiet agencies, whose
 * whole backlog is in the batch and is short. An import then never sits in front of them, not even
 * in the few dozen places of the bounded events queue, where every event is fanned out in turn.
 *
 * The batch is taken round-robin (takeUnpublished): each agency's oldest, then each one's second,
 * and so on until the limit. An agency with fewer events in it than the deepest turn has nothing
 * left behind, except that a full batch may end in the middle of its last turn: there, one fewer
 * proves nothing. A batch short of its limit holds every agency's whole backlog.
 */
export function quietAgencyEvents(batch: readonly StoredEvent[], limit: number): Set<StoredEvent> {
  const counts = new Map<string, number>();
  for (const e of batch) counts.set(e.agency_id, (counts.get(e.agency_id) ?? 0) + 1);
  const full = batch.length >= limit;
  const deepest = Math.max(0, ...counts.values());
  const quiet = (n: number) => n <= EXPRESS_MAX_BACKLOG && (!full || n < deepest - 1);
  return new Set(batch.filter((e) => quiet(counts.get(e.agency_id)!)));
}
