import type { ChannelModel } from 'amqplib';
import { connectToFirst, deliveryMessageProperties } from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
import { withTimeout } from '@trips/runtime';
import { SettingsError } from './errors.ts';

const unavailable = (message: string) => new SettingsError('unavailable', message);

export interface PublishOptions {
  /**
   * How long the connection, and then each batch's confirms, may take. RabbitMQ under a memory or
   * disk alarm accepts publishes and never confirms them; without a bound an owner's click waits
   * for good.
   */
  timeoutMs: number;
  /** Called after each batch is confirmed, with the number published so far. */
  onPublished?: (count: number) => void | Promise<void>;
}

/**
 * Publishes DeliveryMessages straight to the dispatcher's deliveries queue, persistent and
 * confirmed, the way the dispatcher's fan-out does. One connection per call, to the first node of
 * AMQP_URL that answers: owners' actions are rare, and nothing is left open when the module is done.
 */
export async function publishDeliveries(
  amqpUrls: readonly string[],
  queue: string,
  deliveries: AsyncIterable<DeliveryMessage[]>,
  options: PublishOptions,
): Promise<number> {
  const seconds = `${options.timeoutMs / 1000} s`;
  let connection: ChannelModel;
  try {
    connection = await connectToFirst(amqpUrls, { timeout: options.timeoutMs });
  } catch (error) {
    throw unavailable(`cannot reach RabbitMQ (${(error as Error).message}).`);
  }
  connection.on('error', () => {});
  let published = 0;
  try {
    const checker = await connection.createChannel();
    checker.on('error', () => {});
    try {
      await checker.checkQueue(queue);
    } catch {
      throw unavailable(
        `the dispatcher's queue ${queue} does not exist; is the dispatcher running (with this AMQP_PREFIX)?`,
      );
    }
    await checker.close().catch(() => {});
    const ch = await connection.createConfirmChannel();
    ch.on('error', () => {});
    for await (const batch of deliveries) {
      for (const delivery of batch) {
        ch.sendToQueue(queue, Buffer.from(JSON.stringify(delivery)), deliveryMessageProperties(delivery));
      }
      await withTimeout(ch.waitForConfirms(), options.timeoutMs, () =>
        unavailable(
          `RabbitMQ did not confirm the deliveries within ${seconds} (is it blocked by a resource alarm?); ` +
            `${published} were confirmed before.`,
        ),
      );
      published += batch.length;
      await options.onPublished?.(published);
    }
    await ch.close().catch(() => {});
    return published;
  } finally {
    // A blocked connection is closed at once by amqplib; this never waits on the broker for long.
    await withTimeout(connection.close(), options.timeoutMs, () => unavailable('close')).catch(() => {});
  }
}
