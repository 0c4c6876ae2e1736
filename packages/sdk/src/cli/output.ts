import { TripServiceError } from '../errors.ts';
import type { Event } from '../openapi-types.ts';

/** One line per event: time, type, id, then what the command did with it. */
export function eventLine(event: Event, outcome = ''): string {
  const time = new Date().toISOString();
  return `${time}  ${event.type.padEnd(19)}  ${event.id}${outcome ? `  ${outcome}` : ''}\n`;
}

/** What to tell a developer about an API error: what happened and what to do, no stack trace. */
export function explain(error: unknown, baseUrl: string): string {
  if (!(error instanceof TripServiceError)) return (error as Error)?.message ?? String(error);
  const said = `(${error.status ? `${error.status} ` : ''}${error.code}${error.requestId ? `, request ${error.requestId}` : ''})`;
  switch (error.code) {
    case 'unauthorized':
      return `The API refused the key ${said}: it is missing, mistyped or revoked. Set TRIPS_API_KEY to an active key from the agency's API settings.`;
    case 'insufficient_scope':
      return `${error.message} ${said} An owner adds scopes to the key in the agency's API settings; listen and tail need events:read, and the read scope of each kind of object (trips:read, payments:read, contacts:read).`;
    case 'api_not_enabled':
    case 'subscription_inactive':
      return `${error.message} ${said}`;
    case 'connection_error':
    case 'timeout':
      return `Could not reach the API at ${baseUrl}: ${error.message} Is TRIPS_BASE_URL right?`;
    default:
      return `${error.message} ${said}`;
  }
}
