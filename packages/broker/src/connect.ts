// The services' connection to RabbitMQ. A subpath of its own (@trips/broker/connect), so a process
// that only names queues or checks addresses (the API, through the settings module) does not load
// amqp-connection-manager.
import type { Socket } from 'node:net';
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from '@trips/runtime';
import { coalesceWrites } from './coalesce-writes.ts';

/**
 * A connection that reconnects by itself for as long as the service runs, and logs each connect
 * and disconnect. What its channels write in one tick goes out in one write (coalesce-writes.ts). Its channels (RecoveringChannel, @trips/runtime/amqp) set themselves up again on
 * every new connection.
 */
export function connectBroker(amqpUrl: string, logger: Logger): AmqpConnectionManager {
  const connection = amqp.connect([amqpUrl], {
    heartbeatIntervalInSeconds: 10,
  });
  connection.on('connect', ({ connection: model }) => {
    // amqplib's ChannelModel keeps its Connection, which keeps the socket, as `stream`.
    const socket = (model as unknown as { connection?: { stream?: Socket } }).connection?.stream;
    if (socket) coalesceWrites(socket);
    logger.info('connected to RabbitMQ');
  });
  // The message says why (a broker shutdown, a forced reconnect); a stack trace adds nothing here.
  connection.on('disconnect', ({ err }) =>
    logger.warn({ err: err?.message }, 'disconnected from RabbitMQ; reconnecting'),
  );
  return connection;
}
