import { capturedAtOf } from '@trips/broker';
import { parseContent, type ConsumeMessage, type Disposition, type Publisher } from '@trips/broker/client';
import { isValid, type EventMessage } from '@trips/contracts';
import { tracing, type Logger } from '@trips/runtime';
import type { Deliverer } from './deliverer.ts';
import type { DeliveryStore } from './store.ts';
import { traceFanOut } from './tracing.ts';

/**
 * Stage one: a recorded event goes to every active webhook of its agency that subscribes to its
 * type (spec 6.2), each delivery on its own. The first attempts are made here, straight from the
 * event, when the webhook has room: a second trip through RabbitMQ per delivery (publish, confirm,
 * consume, ack) cost more of the machine than the attempt itself. A webhook without room (its
 * slots taken, its breaker open, its attempts slow) or with a backlog gets the delivery in its lane
 * (lanes.ts) instead, so the event is acked at once and the events queue, which every agency
 * shares, drains at the pace of fan-out rather than of any one endpoint.
 *
 * The event is acked only once every first attempt is recorded, every retry confirmed by RabbitMQ
 * and every held delivery committed: a crash in between attempts it again for every webhook, and
 * the receivers dedupe by event id (spec 6.5).
 */
export function fanOutHandler(deps: {
  store: Pick<DeliveryStore, 'subscribed'>;
  deliverer: Deliverer;
  logger: Logger;
}) {
  const { store, deliverer, logger } = deps;
  /**
   * Every first attempt of the event; answers how many webhooks it went to. `capturedAt` (the
   * message's header) goes with each delivery, into its retries and its lane (lag metrics).
   */
  const fanOut = async (
    { agency_id: agencyId, event }: EventMessage,
    publisher: Publisher,
    capturedAt: Date | undefined,
  ) => {
    const targets = await store.subscribed(agencyId, event.type);
    // Every attempt runs to its end before the event is settled, even when one of them failed to
    // record: the event must not come back while its attempts are still going out.
    const settled = await Promise.allSettled(
      targets.map((target) =>
        deliverer.attempt({
          delivery: {
            webhook_id: target.id,
            agency_id: agencyId,
            epoch: target.epoch,
            event,
            attempt: 1,
            first_failed_at: null,
          },
          target,
          publisher,
          source: 'fan_out',
          capturedAt,
        }),
      ),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    logger.debug({ eventId: event.id, type: event.type, webhooks: targets.length }, 'event fanned out');
    return targets.length;
  };
  return async (message: ConsumeMessage, publisher: Publisher): Promise<Disposition> => {
    const body = parseContent(message);
    if (!isValid('EventMessage', body)) {
      logger.error({ messageId: message.properties.messageId }, 'malformed event message parked');
      return 'park';
    }
    const capturedAt = capturedAtOf(message.properties.headers as Record<string, unknown> | undefined);
    const run = () => fanOut(body, publisher, capturedAt);
    const tracer = tracing.tracer;
    if (tracer) await traceFanOut(tracer, message, body, run);
    else await run();
    return 'ack';
  };
}
