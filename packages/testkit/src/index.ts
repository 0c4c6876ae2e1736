export {
  adminQuery,
  adminUrl,
  createTestDatabase,
  ensureTemplate,
  vacuumStats,
  type TestDatabase,
} from './database.ts';
export { waitFor } from './wait.ts';
export { mostInOneSecond } from './per-second.ts';
export * from './amqp.ts';
export { LocalRabbitCluster, rabbitmqInstalled, type QueueState } from './rabbitmq-cluster.ts';
export { LocalPostgresReplica, postgresInstalled } from './postgres-replica.ts';
export { createTestCa, type TestCa } from './tls.ts';
export { startReceiver, type TestReceiver, type ReceivedRequest, type Answer } from './receiver.ts';
export { startSmtp, type TestSmtp, type ReceivedMail } from './smtp.ts';
export { LogCapture } from './logs.ts';
export { sample, scrapeMetrics } from './metrics.ts';
export { verifySignature } from './signature.ts';
export {
  createActivity,
  type Activity,
  type ActivityOptions,
  type CommittedChange,
  type ExpectedEvent,
  type ObjectRef,
} from './activity.ts';
export { startServiceProcess, type ServiceProcess } from './process.ts';
export { testImages } from './services/images.ts';
