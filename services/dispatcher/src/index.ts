export { readConfig, type DispatcherConfig, type DeliveryPolicy } from './config.ts';
export { startDispatcherService, type DispatcherService, type DispatcherHooks } from './service.ts';
export { nextRetry } from './schedule.ts';
export { USER_AGENT, type AttemptError, type AttemptResult } from './sender.ts';
export type { Outcome } from './deliverer.ts';
