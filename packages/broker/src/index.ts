// The broker contract of the services: the names and shape of the RabbitMQ topology, the properties
// of the messages on it, the check of where a webhook may point, and publishing with confirms (its
// timeout, and the settings module's short-lived publish). Below every service, so the recorder, the
// dispatcher and the settings module all import it downward. The services' client (the connection,
// the confirm publisher, the consumer) is a subpath, @trips/broker/client, which only the services
// that hold a connection load.
export {
  declareTopology,
  eventsExchangeName,
  expressExchangeName,
  queueNames,
  QUEUE_LIMITS,
  topology,
  type QueueLimits,
  type Topology,
} from './topology.ts';
export {
  capturedAtOf,
  deliveryMessageProperties,
  eventMessageProperties,
  type RecordedEvent,
} from './message-properties.ts';
export { brokerAddress, connectToFirst, readAmqpUrls } from './amqp-urls.ts';
export {
  addressKind,
  createSsrfGuard,
  isDeliverableHost,
  isPublicAddress,
  SsrfBlocked,
  type SsrfGuard,
} from './ssrf.ts';
export { nextRetry, type Retry, type RetryPolicy } from './retry-schedule.ts';
export { ASKS_TO_WAIT, parseRetryAfter, type RetryAfter } from './retry-after.ts';
export { PublishRefused, PUBLISH_TIMEOUT_MS, UnconfirmedPublish } from './confirms.ts';
export {
  BrokerUnreachable,
  publishToQueue,
  QueueMissing,
  type OutgoingMessage,
  type PublishToQueueOptions,
} from './publish-to-queue.ts';
