import type { ChannelModel, Options } from 'amqplib';
import { withTimeout } from '@trips/runtime';
import { connectToFirst } from './amqp-urls.ts';
import { PUBLISH_TIMEOUT_MS, UnconfirmedPublish } from './confirms.ts';

/** A message to publish: its body and its properties. */
export interface OutgoingMessage {
  content: Buffer;
  properties: Options.Publish;
}

/** No node of AMQP_URL took the connection in time; the message says why for each. */
export class BrokerUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BrokerUnreachable';
  }
}

/** The queue to publish to does not exist. */
export class QueueMissing extends Error {
  constructor(queue: string) {
    super(`the queue ${queue} does not exist`);
    this.name = 'QueueMissing';
  }
}

export interface PublishToQueueOptions {
  /**
   * How long the connection, and then each batch's confirms, may take; default PUBLISH_TIMEOUT_MS.
   * RabbitMQ under a memory or disk alarm takes the publishes and never confirms them.
   */
  timeoutMs?: number;
  /** Called after each batch is confirmed, with the number confirmed so far. */
  onConfirmed?: (count: number) => void | Promise<void>;
}

/**
 * Publishes batches of messages straight to `queue`, persistent unless their properties say
 * otherwise, each batch confirmed before the next is taken, on a connection of its own to the first
 * node of `urls` that answers. For rare publishes (an owner's test event or redelivery): nothing is
 * left open once it returns. Answers how many were confirmed; a missing queue is a QueueMissing
 * before anything is sent, a batch not confirmed in time an UnconfirmedPublish.
 */
export async function publishToQueue(
  urls: readonly string[],
  queue: string,
  batches: AsyncIterable<OutgoingMessage[]>,
  options: PublishToQueueOptions = {},
): Promise<number> {
  const timeoutMs = options.timeoutMs ?? PUBLISH_TIMEOUT_MS;
  let connection: ChannelModel;
  try {
    connection = await connectToFirst(urls, { timeout: timeoutMs });
  } catch (error) {
    throw new BrokerUnreachable((error as Error).message);
  }
  connection.on('error', () => {});
  try {
    // A passive check on a channel of its own: RabbitMQ closes the channel it fails on.
    const checker = await connection.createChannel();
    checker.on('error', () => {});
    await checker.checkQueue(queue).catch(() => {
      throw new QueueMissing(queue);
    });
    await checker.close().catch(() => {});
    const ch = await connection.createConfirmChannel();
    ch.on('error', () => {});
    let confirmed = 0;
    for await (const batch of batches) {
      for (const { content, properties } of batch)
        ch.sendToQueue(queue, content, { persistent: true, ...properties });
      await withTimeout(ch.waitForConfirms(), timeoutMs, () => new UnconfirmedPublish(timeoutMs));
      confirmed += batch.length;
      await options.onConfirmed?.(confirmed);
    }
    await ch.close().catch(() => {});
    return confirmed;
  } finally {
    // A blocked connection is closed at once by amqplib; this never waits on the broker for long.
    await withTimeout(connection.close(), timeoutMs, () => new Error('close')).catch(() => {});
  }
}
