import type { Request } from 'express';
import type { SyncPosition } from '@trips/db';
import { invalidParam } from '../errors.ts';

/**
 * Query parameters are checked strictly, Stripe-style: an unknown parameter (often a typo such
 * as `updatedSince`) is a 400 naming it rather than silently ignored.
 */
export function readQuery(req: Request, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.query)) {
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

const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 timestamp with a zone; a real calendar time, so Postgres never sees nonsense. */
export function isTimestamp(value: string): boolean {
  const m = ISO_TIMESTAMP.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const probe = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  return (
    year >= 1970 &&
    probe.getUTCFullYear() === year &&
    probe.getUTCMonth() === month - 1 &&
    probe.getUTCDate() === day &&
    probe.getUTCHours() === hour &&
    probe.getUTCMinutes() === minute &&
    probe.getUTCSeconds() === second
  );
}

export function readUpdatedSince(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isTimestamp(value)) {
    throw invalidParam(
      'updated_since',
      "'updated_since' must be an ISO 8601 timestamp, e.g. 2026-11-21T10:15:30.123Z.",
    );
  }
  return value;
}

/** List cursors are opaque to clients: base64url of the exact (updated_at, id) position. */
export function encodeListCursor(position: SyncPosition): string {
  return Buffer.from(JSON.stringify({ u: position.updatedAt, i: position.id })).toString('base64url');
}

export function readListCursor(value: string | undefined): SyncPosition | undefined {
  if (value === undefined) return undefined;
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
  if (typeof u !== 'string' || typeof i !== 'string' || !isTimestamp(u) || i.length > 100) throw bad();
  return { updatedAt: u, id: i };
}
