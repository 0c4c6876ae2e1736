import pino, { type DestinationStream, type Logger } from 'pino';
import { SETTINGS } from './settings-table/index.ts';

export type { Logger };

/**
 * Paths that may hold a credential. pino removes them before a line is written, so a secret
 * never reaches a log even when a whole request or config object is logged by mistake.
 */
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'key',
  'secret',
  'password',
  'databaseUrl',
  'amqpUrl',
  'amqpUrls',
  'smtpUrl',
  'redisUrl',
  '*.key',
  '*.secret',
  '*.password',
  // A service's config holds its connection URLs a level or two down (config.rateLimit.redisUrl).
  ...['databaseUrl', 'amqpUrl', 'amqpUrls', 'smtpUrl', 'redisUrl'].flatMap((url) => [
    `*.${url}`,
    `*.*.${url}`,
  ]),
];

/**
 * Standard output, written 4 KiB at a time. pino's default writes each line, or the few gathered
 * while the last write was out, with a thread-pool call of its own: under load the API's log cost
 * it CPU per request over LOG_LEVEL=warn that written in blocks it mostly no longer does. A quiet
 * service's lines wait at most LOG_FLUSH_MS. pino flushes the rest synchronously when the process
 * exits, however it exits, short of SIGKILL.
 */
const LOG_BUFFER_BYTES = 4096;
const LOG_FLUSH_MS = 200;

export function createLogger(
  name: string,
  level: string = process.env.LOG_LEVEL ?? SETTINGS.LOG_LEVEL.default,
  destination: DestinationStream = pino.destination({
    dest: 1,
    sync: false,
    minLength: LOG_BUFFER_BYTES,
    periodicFlush: LOG_FLUSH_MS,
  }),
): Logger {
  return pino({ name, level, redact: { paths: REDACT, censor: '[redacted]' } }, destination);
}
