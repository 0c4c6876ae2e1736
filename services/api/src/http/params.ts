import type { Request } from 'express';
import type { SyncPosition } from '@trips/db/sync';
import { isCalendarTime } from '@trips/runtime';
import { ApiError, invalidParam } from '../errors.ts';
import { holdsControlCharacter } from './control-characters.ts';

/**
 * Query parameters are checked strictly, Stripe-style: an unknown parameter (often a typo such
 * as `updatedSince`) is a 400 naming it rather than silently ignored.
 */
export function readQuery(req: Request, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.query)) {
    // `?=x` has no name to put in `param`, which the contract's Error schema requires non-empty.
    if (name === '') throw new ApiError('invalid_request', 'A query parameter has no name: send name=value.');
    if (!allowed.includes(name)) {
      throw invalidParam(
        name,
        `Unknown query parameter '${name}'.${allowed.length ? ` Allowed: ${allowed.join(', ')}.` : ''}`,
      );
    }
    if (typeof value !== 'string') throw invalidParam(name, `Give '${name}' once, as a single value.`);
    out[name] = value;
  }
  return out;
}

export function readLimit(
  value: string | undefined,
  { min = 1, max, fallback }: { min?: number; max: number; fallback: number },
) {
  if (value === undefined) return fallback;
  const limit = /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!(limit >= min && limit <= max))
    throw invalidParam('limit', `'limit' must be a whole number from ${min} to ${max}.`);
  return limit;
}

/**
 * RFC 3339's date-time (OpenAPI's `format: date-time`): `T` and `Z` in either case, any number of
 * fractional digits, any offset up to ±23:59.
 */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
/** The range Postgres' timestamptz is given: no row was written outside it. */
const EARLIEST_MS = new Date(0).setUTCFullYear(1, 0, 1);
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * Reads an RFC 3339 timestamp into the one form Postgres is ever given: UTC to the microsecond,
 * `YYYY-MM-DDTHH:MM:SS.ffffffZ`. Undefined when it is not a real calendar time. Postgres itself
 * would refuse an offset past ±15:59 or a year 0 with an error, so the offset is applied here;
 * digits past the microsecond are cut, which for `updated_since` errs toward returning a row again
 * rather than skipping one, and a time before year 1 or after 9999 is clamped to the range's end.
 */
function parseTimestamp(value: string): string | undefined {
  const m = RFC3339.exec(value);
  if (!m || !isCalendarTime(value)) return undefined;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = [
    ...m.slice(1, 7),
    m[9] ?? '0',
    m[10] ?? '0',
  ].map(Number) as [number, number, number, number, number, number, number, number];
  if (year < 1 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const offsetMs = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const micros = Number((m[7] ?? '').slice(0, 6).padEnd(6, '0'));
  const ms =
    new Date(0).setUTCFullYear(year, month - 1, day) +
    ((hour * 60 + minute) * 60 + second) * 1000 -
    offsetMs +
    Math.floor(micros / 1000);
  if (ms < EARLIEST_MS) return '0001-01-01T00:00:00.000000Z';
  if (ms > LATEST_MS) return '9999-12-31T23:59:59.999999Z';
  return new Date(ms).toISOString().replace('Z', `${String(micros % 1000).padStart(3, '0')}Z`);
}

export function readUpdatedSince(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const since = parseTimestamp(value);
  if (since === undefined) {
    throw invalidParam(
      'updated_since',
      "'updated_since' must be an RFC 3339 timestamp, e.g. 2026-11-21T10:15:30.123Z.",
    );
  }
  return since;
}

/** List cursors are opaque to clients: base64url of the exact (updated_at, id) position. */
export function encodeListCursor(position: SyncPosition): string {
  return Buffer.from(JSON.stringify({ u: position.updatedAt, i: position.id })).toString('base64url');
}

/** An empty `cursor=` is no cursor: the first page (docs/api.md). */
export function readListCursor(value: string | undefined): SyncPosition | undefined {
  if (value === undefined || value === '') return undefined;
  const bad = () =>
    invalidParam('cursor', "'cursor' is not a cursor this API gave out. Pass next_cursor unchanged.");
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(value)) throw bad();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const { u, i } = (decoded ?? {}) as { u?: unknown; i?: unknown };
  // What a cursor decodes to is a client's value like any other: no id holds a control character.
  if (
    typeof u !== 'string' ||
    typeof i !== 'string' ||
    parseTimestamp(u) !== u ||
    i.length > 100 ||
    holdsControlCharacter(i)
  )
    throw bad();
  return { updatedAt: u, id: i };
}
