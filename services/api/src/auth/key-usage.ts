import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import { markKeysUsed } from '@trips/db/api-keys';
import type { Logger } from '@trips/runtime';

/**
 * Records keys' last use in batches: a write per request would cost the API its speed, and an
 * owner needs "last used" to the minute, not the millisecond.
 */
export class KeyUsageRecorder {
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly db: Kysely<Database>;
  private readonly logger: Logger;
  private readonly intervalMs: number;

  constructor(db: Kysely<Database>, logger: Logger, intervalMs = 30_000) {
    this.db = db;
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  readonly used = (keyId: string): void => {
    this.pending.add(keyId);
  };

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const keyIds = [...this.pending];
    this.pending = new Set();
    await markKeysUsed(this.db, keyIds, new Date()).catch((error: unknown) =>
      this.logger.warn({ err: error }, 'could not record key use'),
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
