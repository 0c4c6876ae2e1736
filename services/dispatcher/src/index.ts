export { readConfig, type DispatcherConfig, type DeliveryPolicy } from './config.ts';
export { startDispatcherService, type DispatcherService, type DispatcherHooks } from './service.ts';
export { nextRetry } from './schedule.ts';
export { deliveryAgent, USER_AGENT, type AttemptError, type AttemptResult } from './sender.ts';
// For bench:dispatcher's bare consumer, which batches its attempts as the dispatcher does.
export { Batcher } from './batching.ts';
export { ATTEMPT_BATCHING } from './store.ts';
export type { Outcome } from './deliverer.ts';
