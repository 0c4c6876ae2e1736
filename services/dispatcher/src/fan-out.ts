import type { ConsumeMessage } from 'amqplib';
import { isValid, type DeliveryMessage } from '@trips/contracts';
import type { Logger } from '@trips/runtime';
import { parseContent, type Disposition, type Publisher } from './consumer.ts';
import type { DeliveryStore } from './store.ts';
import type { Topology } from './topology.ts';

/**
 * Stage one: a recorded event becomes one delivery message per active webhook of its agency that
 * subscribes to its type (spec 6.2). Each delivery then lives on its own, so one webhook failing or
 * hanging never delays another's. The event is acked only after RabbitMQ confirmed every delivery:
 * a crash in between fans it out again, and the receivers dedupe by event id (spec 6.5).
 */
export function fanOutHandler(deps: { store: DeliveryStore; topology: Topology; logger: Logger }) {
  const { store, topology, logger } = deps;
  return async (message: ConsumeMessage, publisher: Publisher): Promise<Disposition> => {
    const body = parseContent(message);
    if (!isValid('EventMessage', body)) {
      logger.error({ messageId: message.properties.messageId }, 'malformed event message parked');
      return 'park';
    }
    const { agency_id: agencyId, event } = body;
    const webhooks = await store.subscribed(agencyId, event.type);
    await Promise.all(
      webhooks.map((webhook) => {
        const delivery: DeliveryMessage = {
          webhook_id: webhook.id,
          agency_id: agencyId,
          epoch: webhook.epoch,
          event,
          attempt: 1,
          first_failed_at: null,
        };
        return publisher.publish('', topology.deliveriesQueue, Buffer.from(JSON.stringify(delivery)), {
          contentType: 'application/json',
          messageId: event.id,
          type: event.type,
          headers: { webhook_id: webhook.id },
        });
      }),
    );
    logger.debug({ eventId: event.id, type: event.type, webhooks: webhooks.length }, 'event fanned out');
    return 'ack';
  };
}
