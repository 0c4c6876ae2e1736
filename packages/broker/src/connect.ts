// The services' connection to RabbitMQ. A subpath of its own (@trips/broker/connect), so a process
// that only names queues or checks addresses (the API, through the settings module) does not load
// amqp-connection-manager.
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from '@trips/runtime';

/**
 * A connection that reconnects by itself for as long as the service runs, and logs each connect
 * and disconnect. Its channels (RecoveringChannel, @trips/runtime/amqp) set themselves up again on
 * every new connection.
 */
export function connectBroker(amqpUrl: string, logger: Logger): AmqpConnectionManager {
  const connection = amqp.connect([amqpUrl], {
    heartbeatIntervalInSeconds: 10,
  });
  connection.on('connect', () => logger.info('connected to RabbitMQ'));
  // The message says why (a broker shutdown, a forced reconnect); a stack trace adds nothing here.
  connection.on('disconnect', ({ err }) =>
    logger.warn({ err: err?.message }, 'disconnected from RabbitMQ; reconnecting'),
  );
  return connection;
}
