import type { Logger } from './logger.ts';

/**
 * Logs a run of failures of one kind of work as one error line when the run starts and one info
 * line when the work succeeds again, instead of a line per attempt. Through an outage of Postgres
 * or RabbitMQ every retry fails alike, and a line each would bury the lines that say something
 * else; the closing line says how long it lasted, how many attempts failed and the last error.
 */
export class OutageLog {
  private readonly logger: Logger;
  private readonly message: string;
  private failures = 0;
  private since = 0;
  private lastError: unknown;

  /** `message` names the work that failed: the first failure's line, e.g. 'round failed'. */
  constructor(logger: Logger, message: string) {
    this.logger = logger;
    this.message = message;
  }

  /** Whether the work is failing now (a run began and has not ended). */
  get failing(): boolean {
    return this.failures > 0;
  }

  /** One failure; logged only when it starts a run. `fields` go on that line. */
  failed(error: unknown, fields: Record<string, unknown> = {}): void {
    this.lastError = error;
    if (this.failures++ > 0) return;
    this.since = Date.now();
    this.logger.error({ err: error, ...fields }, `${this.message}; retrying quietly until it works`);
  }

  /** The work succeeded: ends a run of failures, if there was one, with its one line. */
  succeeded(fields: Record<string, unknown> = {}): void {
    if (this.failures === 0) return;
    const failures = this.failures;
    this.failures = 0;
    this.logger.info(
      { ...fields, failures, failingForMs: Date.now() - this.since, lastError: errorText(this.lastError) },
      `${this.message}: works again`,
    );
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
