import type { IRouter } from 'express';
import type { Kysely } from 'kysely';
import {
  EVENTS_SCOPE,
  EVENT_TYPE_NAMES,
  isEventType,
  eventRecord,
  scopeForEventType,
  type EventType,
} from '@trips/contracts';
import type { Database } from '@trips/db';
import { readEventPage } from '@trips/db/events';
import { callerOf } from '../auth/authenticate.ts';
import { guard } from '../auth/scopes.ts';
import { ApiError, invalidParam } from '../errors.ts';
import { readLimit, readQuery } from '../http/params.ts';
import { sendJson } from '../http/send-json.ts';
import { EventCursors, type Position } from './event-cursors.ts';

const PARAMS = ['after', 'limit', 'types'] as const;

function readTypes(value: string | undefined): EventType[] {
  if (value === undefined) return EVENT_TYPE_NAMES;
  const names = value.split(',').map((name) => name.trim());
  const unknown = names.find((name) => !isEventType(name));
  if (unknown !== undefined) {
    throw invalidParam(
      'types',
      `Unknown event type '${unknown.slice(0, 100)}'. Known: ${EVENT_TYPE_NAMES.join(', ')}.`,
    );
  }
  return [...new Set(names)] as EventType[];
}

export interface EventsRouterDeps {
  db: Kysely<Database>;
  /** EVENT_RETENTION: how far back a cursor may reach before it answers 410. */
  eventRetentionMs: number;
  /** Seals and opens `after` cursors (sealed: the seq in them is the whole platform's). */
  eventCursors: EventCursors;
}

/**
 * GET /events (spec 4.2, D6). Reads `seq > cursor`: the recorder makes events visible in seq order
 * (see packages/db repositories/events.ts), so a reader paging while writers commit never skips
 * one. A key sees only the types its scopes allow (D2); `events:read` is needed for the endpoint.
 * Returns the path it adds.
 */
export function addEventsRoute(router: IRouter, deps: EventsRouterDeps): string[] {
  const retentionMs = deps.eventRetentionMs;
  const cursors = deps.eventCursors;
  const path = '/events';
  router.get(path, ...guard(EVENTS_SCOPE), async (req, res) => {
    const query = readQuery(req, PARAMS);
    const limit = readLimit(query.limit, { max: 1000, fallback: 100 });
    const requested = readTypes(query.types);
    const caller = callerOf(req);
    // An empty `after=` is no cursor: reading starts at the oldest event, as without it (docs/events.md).
    const sealed = query.after || undefined;
    const after = sealed === undefined ? undefined : cursors.open(caller.agencyId, sealed);
    if (sealed !== undefined && !after) {
      if (EventCursors.isUnsealed(sealed)) {
        throw new ApiError(
          'cursor_expired',
          'This cursor is of an older format that is no longer read. Resync with updated_since, then read events without after.',
        );
      }
      throw invalidParam('after', "'after' is not a cursor this API gave you. Pass next_cursor unchanged.");
    }
    // When the cursor was handed out tells whether events it had not reached yet may be gone.
    if (after && after.at < Date.now() - retentionMs) {
      throw new ApiError(
        'cursor_expired',
        'This cursor is older than the event retention window, so events may have been lost to it. Resync with updated_since, then read events without after.',
      );
    }
    const types = requested.filter((type) => caller.scopes.has(scopeForEventType(type)));
    const page = await readEventPage(deps.db, {
      agencyId: caller.agencyId,
      afterSeq: after?.seq ?? 0,
      types,
      limit: limit + 1,
      retentionMs,
    });
    const hasMore = page.events.length > limit;
    const events = page.events.slice(0, limit);
    const last = events.at(-1);
    // A full page resumes after its last event; otherwise the reader has seen everything visible
    // now, and resumes from the newest visible position of all agencies (nothing can appear
    // behind it later).
    const next: Position = hasMore
      ? { seq: last!.seq, at: last!.created_at.getTime() }
      : { seq: page.visibleSeq, at: page.now.getTime() };
    sendJson(res, {
      object: 'list',
      data: events.map(eventRecord),
      next_cursor: cursors.seal(caller.agencyId, next),
      has_more: hasMore,
    });
  });
  return [path];
}
