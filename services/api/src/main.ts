import { ConfigError, createLogger, stopOnSignals } from '@trips/runtime';
import { loadConfig } from './config.ts';
import { startApi } from './server.ts';

// Wiring only: configuration → dependencies → start; stopping is startApi's stop().
const logger = createLogger('api');
try {
  const config = loadConfig();
  const api = await startApi(config, logger);
  stopOnSignals(api.stop, logger, config.shutdownDeadlineMs);
} catch (error) {
  if (error instanceof ConfigError) logger.fatal(error.message);
  else logger.fatal({ err: error }, 'api failed to start');
  process.exit(1);
}
