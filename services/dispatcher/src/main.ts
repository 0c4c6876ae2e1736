import { createLogger, stopOnSignals } from '@trips/runtime';
import { readConfig } from './config.ts';
import { startDispatcherService } from './service.ts';

// Wiring only: config (fails before any connection) → service → graceful stop on SIGTERM/SIGINT.
const config = readConfig();
const logger = createLogger('dispatcher', config.logLevel);
const service = await startDispatcherService(config, logger);
stopOnSignals(() => service.stop(), logger, config.stopTimeoutMs);
