// The services' RabbitMQ client (@trips/broker/client): the connection, channels that come back
// after RabbitMQ closes them, and the consumer with its acks. A subpath of its own, so a process
// that only names queues or checks addresses (the API, through the settings module) does not load
// amqp-connection-manager.
export { connectBroker } from './connect.ts';
export { RecoveringChannel } from './recovering-channel.ts';
export {
  Consumer,
  parseContent,
  type ConsumerOptions,
  type Disposition,
  type Handler,
  type Publisher,
} from './consumer.ts';
