// How a failure of Postgres' own (the server gone, restarting, or not the primary) is told from a
// failure of the statement: the API answers the first with 503 and Retry-After, and the pools drop
// a connection after it instead of handing it out again.

/** SQLSTATEs of a server going away or not taking connections (class 08, and 57P01–57P03). */
const SERVER_GONE = /^(08...|57P0[123])$/;

/** Node's codes for a connection that could not be made or was cut (a DNS name that no longer resolves included). */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** pg's own errors for a connection that failed or was lost, which carry no code. */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

/**
 * The database is unreachable or cannot serve now: during a failover, a restart or a network cut.
 * Worth retrying after a pause; saying so is all a caller can do.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // Read by shape, not instanceof: node's socket errors may come from another realm (a vm context).
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === 'string' && (SERVER_GONE.test(code) || SOCKET_CODES.has(code))) return true;
  // A name that resolves to several addresses, none of which answered.
  if (Array.isArray(errors)) return errors.some(isDatabaseUnavailable);
  return typeof message === 'string' && PG_CONNECTION_MESSAGES.some((m) => message.startsWith(m));
}

/**
 * A connection that answered this must not be used again: its server is going or gone, or no longer
 * takes writes (25006: a primary demoted by a switchover, or a replica reached through a route not
 * yet moved). A new connection through the failover address reaches the primary of now.
 */
export function spoilsConnection(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '25006' || isDatabaseUnavailable(error);
}
