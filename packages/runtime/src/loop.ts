import type { Logger } from './logger.ts';
import { OutageLog } from './outage-log.ts';

/**
 * Runs `work` again and again: at once while it answers more than 0 (more to do), after `idleMs`
 * when it answers 0, after a growing back-off (up to 5 s) when it fails, logging a run of failures
 * once (OutageLog), not every round of it. `kick()` ends an idle
 * wait early, or makes the round running now be followed at once by another. `stop()` lets the
 * current round finish (the current batch commits or rolls back whole) and resolves once it has.
 */
export class Loop {
  private readonly name: string;
  private readonly work: () => Promise<number>;
  private readonly idleMs: number;
  private readonly outage: OutageLog;
  private stopping = false;
  private wake: (() => void) | undefined;
  /** kick() came while a round ran. */
  private kicked = false;
  private running: Promise<void> | undefined;
  /** Time of the last round that finished without error: /healthz reports a stuck loop. */
  lastSuccessAt = Date.now();

  constructor(name: string, work: () => Promise<number>, idleMs: number, logger: Logger) {
    this.name = name;
    this.work = work;
    this.idleMs = idleMs;
    this.outage = new OutageLog(logger, 'round failed');
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Runs the next round now: ends an idle wait, or, during a round, skips the wait after it. */
  kick(): void {
    if (this.wake) this.wake();
    else this.kicked = true;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.kick();
    await this.running;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let delay = this.idleMs;
      try {
        const done = await this.work();
        this.lastSuccessAt = Date.now();
        this.outage.succeeded({ loop: this.name });
        failures = 0;
        if (done > 0) delay = 0;
      } catch (error) {
        failures++;
        delay = Math.min(5_000, 100 * 2 ** Math.min(failures, 6));
        this.outage.failed(error, { loop: this.name, retryInMs: delay });
      }
      // A kick during the round asked for another at once: what it announced may have come too
      // late for this round to see.
      if (this.kicked && failures === 0) delay = 0;
      this.kicked = false;
      if (delay > 0 && !this.stopping) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }
}
