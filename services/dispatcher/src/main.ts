import { runService } from '@trips/runtime';
import { readConfig } from './config.ts';
import { startDispatcherService } from './service.ts';

// Wiring only: config (fails before any connection) → service → graceful stop on SIGTERM/SIGINT.
await runService({
  name: 'dispatcher',
  readConfig: () => readConfig(),
  start: startDispatcherService,
  stopDeadlineMs: (config) => config.stopTimeoutMs,
});
