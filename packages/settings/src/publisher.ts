import {
  BrokerUnreachable,
  deliveryMessageProperties,
  publishToQueue,
  QueueMissing,
  UnconfirmedPublish,
  type OutgoingMessage,
} from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
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
 * AMQP_URL that answers (@trips/broker's publishToQueue): owners' actions are rare, and nothing is
 * left open when the module is done. The broker's failures become `unavailable`, in words for the
 * platform team's log.
 */
export async function publishDeliveries(
  amqpUrls: readonly string[],
  queue: string,
  deliveries: AsyncIterable<DeliveryMessage[]>,
  options: PublishOptions,
): Promise<number> {
  let published = 0;
  try {
    return await publishToQueue(amqpUrls, queue, messages(deliveries), {
      timeoutMs: options.timeoutMs,
      onConfirmed: async (count) => {
        published = count;
        await options.onPublished?.(count);
      },
    });
  } catch (error) {
    if (error instanceof BrokerUnreachable) throw unavailable(`cannot reach RabbitMQ (${error.message}).`);
    if (error instanceof QueueMissing)
      throw unavailable(
        `the dispatcher's queue ${queue} does not exist; is the dispatcher running (with this AMQP_PREFIX)?`,
      );
    if (error instanceof UnconfirmedPublish)
      throw unavailable(
        `RabbitMQ did not confirm the deliveries within ${options.timeoutMs / 1000} s (is it blocked by a resource alarm?); ` +
          `${published} were confirmed before.`,
      );
    throw error;
  }
}

async function* messages(deliveries: AsyncIterable<DeliveryMessage[]>): AsyncIterable<OutgoingMessage[]> {
  for await (const batch of deliveries) {
    yield batch.map((delivery) => ({
      content: Buffer.from(JSON.stringify(delivery)),
      properties: deliveryMessageProperties(delivery),
    }));
  }
}
