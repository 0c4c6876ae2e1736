import { runService } from '@trips/runtime';
import { readConfig } from './config.ts';
import { startApiService } from './server.ts';

// Wiring only: configuration → dependencies → start; stopping is startApiService's stop().
await runService({
  name: 'api',
  readConfig: () => readConfig(),
  start: startApiService,
  stopDeadlineMs: (config) => config.shutdownDeadlineMs,
});
