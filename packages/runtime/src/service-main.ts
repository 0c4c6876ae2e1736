import { ConfigError } from './env.ts';
import { createLogger, type Logger } from './logger.ts';
import { SETTINGS } from './settings-table/index.ts';
import { stopOnSignals } from './signals.ts';
import { readTracingConfig, startTracing, stopTracing, type TracingConfig } from './tracing.ts';

export interface ServiceMain<Config extends { logLevel: string }> {
  name: string;
  /** Reads and checks the environment; throws ConfigError naming every bad variable. */
  readConfig: () => Config;
  start: (config: Config, logger: Logger) => Promise<{ stop(): Promise<void> }>;
  /** How long a graceful stop may take once SIGTERM arrives. */
  stopDeadlineMs: (config: Config) => number;
}

/**
 * How every service starts: the configuration first, before any connection, then the logger at
 * its level, then the service, then a graceful stop on SIGTERM or SIGINT. A bad setting, or a
 * start that fails (a database that cannot be reached, say), is one fatal log line that says why,
 * and exit code 1; never an uncaught exception's stack trace on stderr.
 */
export async function runService<Config extends { logLevel: string }>(
  main: ServiceMain<Config>,
): Promise<void> {
  let config: Config;
  let tracingConfig: TracingConfig | undefined;
  try {
    config = main.readConfig();
    tracingConfig = readTracingConfig(main.name);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // LOG_LEVEL itself may be what is wrong: this line is written at the default level.
    createLogger(main.name, SETTINGS.LOG_LEVEL.default).fatal(error.message);
    process.exit(1);
  }
  const logger = createLogger(main.name, config.logLevel);
  try {
    // Before the service, so that its first spans are traced; off, it loads nothing (tracing.ts).
    await startTracing(tracingConfig, logger);
    const service = await main.start(config, logger);
    // The spans of the last work go out after the service stopped, within the same deadline.
    const stop = async () => {
      await service.stop();
      await stopTracing();
    };
    stopOnSignals(stop, logger, main.stopDeadlineMs(config));
  } catch (error) {
    logger.fatal({ err: error }, `${main.name} failed to start`);
    process.exit(1);
  }
}
