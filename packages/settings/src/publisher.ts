import amqplib from 'amqplib';
import type { DeliveryMessage } from '@trips/contracts';
import { SettingsError } from './errors.ts';

/**
 * Publishes DeliveryMessages straight to the dispatcher's deliveries queue, persistent and
 * confirmed, the way the dispatcher's fan-out does. One connection per call: owners' actions are
 * rare, and nothing is left open when the module is done.
 */
export async function publishDeliveries(
  amqpUrl: string,
  queue: string,
  deliveries: AsyncIterable<DeliveryMessage[]>,
  onPublished: (count: number) => void | Promise<void> = () => {},
): Promise<number> {
  let connection: amqplib.ChannelModel;
  try {
    connection = await amqplib.connect(amqpUrl);
  } catch (error) {
    throw new SettingsError('unavailable', `cannot reach RabbitMQ (${(error as Error).message}).`);
  }
  connection.on('error', () => {});
  let published = 0;
  try {
    const checker = await connection.createChannel();
    checker.on('error', () => {});
    try {
      await checker.checkQueue(queue);
    } catch {
      throw new SettingsError(
        'unavailable',
        `the dispatcher's queue ${queue} does not exist; is the dispatcher running (with this AMQP_PREFIX)?`,
      );
    }
    await checker.close().catch(() => {});
    const ch = await connection.createConfirmChannel();
    for await (const batch of deliveries) {
      for (const delivery of batch) {
        ch.sendToQueue(queue, Buffer.from(JSON.stringify(delivery)), {
          persistent: true,
          contentType: 'application/json',
          messageId: delivery.event.id,
          type: delivery.event.type,
          headers: { webhook_id: delivery.webhook_id },
        });
      }
      await ch.waitForConfirms();
      published += batch.length;
      await onPublished(published);
    }
    await ch.close().catch(() => {});
    return published;
  } finally {
    await connection.close().catch(() => {});
  }
}
