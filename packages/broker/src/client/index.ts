// The services' RabbitMQ client (@trips/broker/client): the connection, channels that come back
// after RabbitMQ closes them, the confirm publisher, and the consumer with its acks. A subpath of its
// own, so a process that only names queues or checks addresses (the API, through the settings
// module) does not load amqp-connection-manager.
export { connectBroker } from './connect.ts';
export { RecoveringChannel } from './recovering-channel.ts';
export { ConfirmPublisher, type ConfirmPublisherOptions, type Publisher } from './confirm-publisher.ts';
export { Consumer, parseContent, type ConsumerOptions } from './consumer.ts';
export type { Disposition, Handler } from './handling.ts';
// The client libraries' types the services name, so that only this package depends on them.
export type { AmqpConnectionManager } from 'amqp-connection-manager';
export type { ConsumeMessage, Message, Options } from 'amqplib';
