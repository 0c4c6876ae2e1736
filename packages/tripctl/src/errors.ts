import { ConfigError } from '@trips/runtime';
import { SettingsError } from '@trips/settings';

/** 2: the command line or the environment is wrong; 1: the command ran and could not do its job. */
export type ExitCode = 1 | 2;

/** A failure the user can act on; its message is printed as is, never with a stack trace. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  constructor(message: string, exitCode: ExitCode) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** A bad or missing argument (exit 2). */
export function usageError(message: string): CliError {
  return new CliError(message, 2);
}

/** An operational failure such as "no such agency" (exit 1). */
export function failure(message: string): CliError {
  return new CliError(message, 1);
}

interface PgLikeError {
  code?: string;
  errno?: number;
  constraint?: string;
  detail?: string;
  address?: string;
  port?: number;
  errors?: unknown[];
}

/** Where the database is, for messages: host, port and name only, never the password. */
function describeDatabase(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'the configured database';
  }
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);

/**
 * Turns anything a command threw into one message and exit code. Postgres and network errors are
 * translated into what the operator should check; anything unforeseen still prints only its
 * message, so a stack trace, SQL or a connection string never reaches the terminal.
 */
export function toCliError(error: unknown, databaseUrl: string | undefined): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof ConfigError) return usageError(error.message);
  // The settings module's refusals: bad input is the caller's to fix (2), the rest operational (1).
  if (error instanceof SettingsError) {
    return error.code === 'invalid' ? usageError(error.message) : failure(error.message);
  }
  const where = databaseUrl ? describeDatabase(databaseUrl) : 'the database';
  const e = (error ?? {}) as PgLikeError & { message?: string };
  // Node reports a refused localhost connection as an AggregateError (one per address family).
  const code = e.code ?? (e.errors?.[0] as PgLikeError | undefined)?.code;
  if (code && CONNECT_CODES.has(code))
    return failure(`cannot reach Postgres at ${where} (${code}); check DATABASE_URL`);
  if (typeof e.message === 'string' && /timeout exceeded when trying to connect/i.test(e.message)) {
    return failure(`cannot reach Postgres at ${where} (connection timed out); check DATABASE_URL`);
  }
  switch (code) {
    case '3D000':
      return failure(`database ${where} does not exist; create it, then run 'tripctl migrate'`);
    case '28P01':
    case '28000':
      return failure(`Postgres at ${where} refused the credentials in DATABASE_URL`);
    case '42P01':
      return failure(`the schema is missing at ${where}; run 'tripctl migrate' first`);
    case '23505':
      return failure(`already exists: ${e.detail ?? e.message}`);
    case '23503':
      return failure(`refers to something that does not exist: ${e.detail ?? e.message}`);
    case '23514':
      return failure(`refused by the schema rule ${e.constraint ?? '(unknown)'}`);
  }
  const message = error instanceof Error && error.message ? error.message : String(code ?? error);
  return failure(message);
}
