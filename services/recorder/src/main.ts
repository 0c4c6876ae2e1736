import { runService } from '@trips/runtime';
import { readConfig } from './config.ts';
import { startRecorderService } from './service.ts';

// Wiring only: config (fails before any connection) → service → graceful stop on SIGTERM/SIGINT.
await runService({
  name: 'recorder',
  readConfig: () => readConfig(),
  start: startRecorderService,
  stopDeadlineMs: (config) => config.stopTimeoutMs,
});
