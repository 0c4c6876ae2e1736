import { TripServiceError } from '../errors.ts';
import type { Event } from '../openapi-types.ts';

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

/**
 * What a terminal acts on rather than shows: C0 and C1 controls and DEL (cursor moves, colours,
 * a cleared screen, a forged line), Unicode's line separators and its direction overrides (text
 * shown in another order than it is), and the backslash, so that an escape cannot be forged.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is its job
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\\]/g;

/**
 * Text from outside (the API, a receiver, a key someone pasted) made safe to print on one line:
 * every character a terminal would act on is written as an escape (`\n`, `\x1b`, `\u202e`), and
 * text over `max` characters is cut with an ellipsis.
 */
export function shown(text: string, max = 200): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return (
      NAMED[c] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`)
    );
  });
}

/** One line per event: time, type, id, then what the command did with it. */
export function eventLine(event: Event, outcome = ''): string {
  const time = new Date().toISOString();
  return `${time}  ${shown(event.type).padEnd(19)}  ${shown(event.id)}${outcome ? `  ${outcome}` : ''}\n`;
}

/** The line of an item that was skipped: what it was, as far as it can be told, and why. */
export function skippedLine(item: unknown, problem: string): string {
  const time = new Date().toISOString();
  const id = (item as { id?: unknown } | null)?.id;
  // An id at fault is quoted by the problem itself.
  const which = typeof id === 'string' && !problem.startsWith('id ') ? ` ${shown(id, 60)}` : '';
  return `${time}  ✗ skipped${which}: ${problem}; the cursor moves past it\n`;
}

/** What to tell a developer about an API error: what happened and what to do, no stack trace. */
export function explain(error: unknown, baseUrl: string): string {
  if (!(error instanceof TripServiceError)) return shown((error as Error)?.message ?? String(error), 500);
  const requestId = error.requestId ? `, request ${shown(error.requestId, 60)}` : '';
  const said = `(${error.status ? `${error.status} ` : ''}${shown(error.code, 60)}${requestId})`;
  const message = shown(error.message, 500);
  switch (error.code) {
    case 'unauthorized':
      return `The API refused the key ${said}: it is missing, mistyped or revoked. Set TRIPS_API_KEY to an active key from the agency's API settings.`;
    case 'insufficient_scope':
      return `${message} ${said} An owner adds scopes to the key in the agency's API settings; listen and tail need events:read, and the read scope of each kind of object (trips:read, payments:read, contacts:read).`;
    case 'api_not_enabled':
    case 'subscription_inactive':
      return `${message} ${said}`;
    case 'connection_error':
    case 'timeout':
      return `Could not reach the API at ${shown(baseUrl)}: ${message} Is TRIPS_BASE_URL right?`;
    default:
      return `${message} ${said}`;
  }
}
