import { createLogger, stopOnSignals } from '@trips/runtime';
import { readConfig } from './config.ts';
import { startRecorderService } from './service.ts';

// Wiring only: config (fails before any connection) → service → graceful stop on SIGTERM/SIGINT.
const config = readConfig();
const logger = createLogger('recorder', config.logLevel);
const service = await startRecorderService(config, logger);
stopOnSignals(() => service.stop(), logger, config.stopTimeoutMs);
