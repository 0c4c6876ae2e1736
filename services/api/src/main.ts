import { runService } from '@trips/runtime';
import { loadConfig } from './config.ts';
import { startApi } from './server.ts';

// Wiring only: configuration → dependencies → start; stopping is startApi's stop().
await runService({
  name: 'api',
  readConfig: loadConfig,
  start: startApi,
  stopDeadlineMs: (config) => config.shutdownDeadlineMs,
});
