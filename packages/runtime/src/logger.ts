import pino, { type DestinationStream, type Logger } from 'pino';

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
  'smtpUrl',
  '*.key',
  '*.secret',
  '*.password',
];

export function createLogger(
  name: string,
  level = process.env.LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  const options = { name, level, redact: { paths: REDACT, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
