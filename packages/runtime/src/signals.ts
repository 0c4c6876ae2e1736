import type { Logger } from 'pino';

/**
 * SIGTERM or SIGINT starts a graceful stop; a second signal or the deadline forces the exit.
 * Kubernetes sends SIGTERM and then SIGKILL after the grace period, so the deadline is kept a
 * little shorter than terminationGracePeriodSeconds, and the exit code says which way it ended.
 */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger, deadlineMs = 25_000): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal, deadlineMs }, 'stopping gracefully');
    const timer = setTimeout(() => {
      logger.error({ deadlineMs }, 'graceful stop missed its deadline: exiting');
      process.exit(1);
    }, deadlineMs);
    timer.unref();
    stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'graceful stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
