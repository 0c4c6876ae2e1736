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
import { readEventPage, type Database } from '@trips/db';
import { callerOf } from '../auth/authenticate.ts';
import { guard } from '../auth/scopes.ts';
import { ApiError, invalidParam } from '../errors.ts';
import { readLimit, readQuery } from '../http/params.ts';
import { sendJson } from '../http/send-json.ts';

const PARAMS = ['after', 'limit', 'types'] as const;

/**
 * The `after` cursor: base64url of {v, s, t}: the format version, the seq the reader has seen
 * everything up to, and when that position was handed out (ms). `t` is what makes expiry
 * detectable: a cursor older than the retention window may have lost events (410). A page that
 * reaches the present hands out a fresh `t`, so a reader that keeps polling never expires.
 */
interface Position {
  seq: number;
  at: number;
}

export function encodeEventCursor(p: Position): string {
  return Buffer.from(JSON.stringify({ v: 1, s: p.seq, t: p.at })).toString('base64url');
}

function readEventCursor(value: string | undefined): Position | undefined {
  if (value === undefined) return undefined;
  const bad = () =>
    invalidParam('after', "'after' is not a cursor this API gave out. Pass next_cursor unchanged.");
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(value)) throw bad();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const { v, s, t } = (decoded ?? {}) as { v?: unknown; s?: unknown; t?: unknown };
  if (
    v !== 1 ||
    !Number.isSafeInteger(s) ||
    (s as number) < 0 ||
    !Number.isSafeInteger(t) ||
    (t as number) < 0
  ) {
    throw bad();
  }
  return { seq: s as number, at: t as number };
}

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
}

/**
 * GET /events (spec 4.2, D6). Reads `seq > cursor`: the recorder makes events visible in seq order
 * (see packages/db repositories/events.ts), so a reader paging while writers commit never skips
 * one. A key sees only the types its scopes allow (D2); `events:read` is needed for the endpoint.
 */
export function addEventsRoute(router: IRouter, deps: EventsRouterDeps): void {
  const retentionMs = deps.eventRetentionMs;
  router.get('/events', ...guard(EVENTS_SCOPE), async (req, res) => {
    const query = readQuery(req, PARAMS);
    const limit = readLimit(query.limit, { max: 1000, fallback: 100 });
    const requested = readTypes(query.types);
    const after = readEventCursor(query.after);
    if (after && after.at < Date.now() - retentionMs) {
      throw new ApiError(
        'cursor_expired',
        'This cursor is older than the event retention window, so events may have been lost to it. Resync with updated_since, then read events without after.',
      );
    }
    const caller = callerOf(req);
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
      next_cursor: encodeEventCursor(next),
      has_more: hasMore,
    });
  });
}
