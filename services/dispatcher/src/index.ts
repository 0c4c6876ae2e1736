export { readConfig, type DispatcherConfig, type DeliveryPolicy } from './config.ts';
export { startDispatcherService, type DispatcherService, type DispatcherHooks } from './service.ts';
export { topology, queueNames, type Topology } from './topology.ts';
export { signatureHeader } from './signature.ts';
export { nextRetry } from './schedule.ts';
export { USER_AGENT, type AttemptError, type AttemptResult } from './delivery.ts';
export type { Outcome } from './deliverer.ts';
export { isPublicAddress } from './ssrf.ts';
