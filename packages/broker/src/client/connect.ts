import type { Socket } from 'node:net';
import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import type { Logger } from '@trips/runtime';
import { brokerAddress } from '../amqp-urls.ts';
import { coalesceWrites } from './coalesce-writes.ts';

/**
 * The pause before the next connection attempt, after a connection is lost or an attempt failed.
 * Short, because with a cluster the next attempt goes to another node, which is most likely up; a
 * refused connection to a broker that is down costs nothing.
 */
const RECONNECT_PAUSE_S = 1;
/** A node that does not answer at all (its zone is gone) is given up for the next after this. */
const CONNECT_TIMEOUT_MS = 5_000;

/**
 * A connection that reconnects by itself for as long as the service runs, and logs each connect
 * (naming the node) and disconnect. With several URLs (the nodes of a cluster, AMQP_URL), the
 * first connection goes to the first that answers, and each reconnection to the next one in turn,
 * as amqp-connection-manager goes round the list. Which node a service is connected to matters
 * little: the queues' leaders are spread over the nodes whatever the clients do, and RabbitMQ
 * forwards between them. What its channels write in one tick goes out in one write
 * (coalesce-writes.ts). Its channels (RecoveringChannel) set themselves up again on every new
 * connection.
 */
export function connectBroker(urls: readonly string[], logger: Logger): AmqpConnectionManager {
  const connection = amqp.connect([...urls], {
    heartbeatIntervalInSeconds: 10,
    reconnectTimeInSeconds: RECONNECT_PAUSE_S,
    connectionOptions: { timeout: CONNECT_TIMEOUT_MS },
  });
  connection.on('connect', ({ connection: model, url }) => {
    // amqplib's ChannelModel keeps its Connection, which keeps the socket, as `stream`.
    const socket = (model as unknown as { connection?: { stream?: Socket } }).connection?.stream;
    if (socket) coalesceWrites(socket);
    logger.info({ broker: brokerAddress(String(url)) }, 'connected to RabbitMQ');
  });
  // The message says why (a broker shutdown, a forced reconnect); a stack trace adds nothing here.
  connection.on('disconnect', ({ err }) =>
    logger.warn({ err: err?.message }, 'disconnected from RabbitMQ; reconnecting'),
  );
  return connection;
}
