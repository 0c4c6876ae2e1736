import type { Channel, ChannelModel } from 'amqplib';

/**
 * A quorum queue that dead-letters to a parked queue, as the dispatcher declares its own (with a
 * delivery limit when given), both emptied.
 */
export async function declareWithParked(
  ch: Channel,
  { queue, parked, deliveryLimit }: { queue: string; parked: string; deliveryLimit?: number },
): Promise<void> {
  await ch.assertQueue(parked, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.assertQueue(queue, {
    durable: true,
    arguments: {
      'x-queue-type': 'quorum',
      ...(deliveryLimit !== undefined && { 'x-delivery-limit': deliveryLimit }),
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': parked,
    },
  });
  await ch.purgeQueue(queue);
  await ch.purgeQueue(parked);
}

/** How many messages wait in a queue (those delivered and not yet settled are not counted). */
export async function depth(connection: ChannelModel, queue: string): Promise<number> {
  const ch = await connection.createChannel();
  const { messageCount } = await ch.checkQueue(queue);
  await ch.close();
  return messageCount;
}
