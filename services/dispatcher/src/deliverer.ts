import type { ConsumeMessage } from 'amqplib';
import { isValid, type DeliveryMessage } from '@trips/contracts';
import type { DeliveryTarget } from '@trips/db';
import type { Logger } from '@trips/runtime';
import type { DeliveryPolicy } from './config.ts';
import { parseContent, type Disposition, type Publisher } from './consumer.ts';
import type { AttemptResult, Sender } from './delivery.ts';
import type { DeferReason, Endpoints, Source } from './endpoints.ts';
import { deferDelay, nextRetry } from './schedule.ts';
import type { DeliveryStore } from './store.ts';
import type { Topology } from './topology.ts';

export interface DelivererDeps {
  store: DeliveryStore;
  sender: Sender;
  endpoints: Endpoints;
  policy: DeliveryPolicy;
  topology: Topology;
  logger: Logger;
  /** Told about every outcome (metrics, tests). */
  onOutcome?: (outcome: Outcome, delivery: DeliveryMessage) => void;
}

/** Every way a delivery can end, one handler each (architecture example 5). */
export type Outcome =
  | { kind: 'delivered'; result: AttemptResult }
  | { kind: 'retry_scheduled'; result: AttemptResult; delayMs: number }
  | { kind: 'gave_up'; result: AttemptResult }
  | { kind: 'deferred'; reason: DeferReason; delayMs: number }
  | { kind: 'queued'; reason: 'endpoint_busy' }
  | { kind: 'dropped'; reason: 'webhook_gone' | 'webhook_off' | 'unsubscribed' };

export interface Deliverer {
  /** One attempt of the delivery to its webhook as just read (undefined: the webhook is gone). */
  attempt(
    delivery: DeliveryMessage,
    target: DeliveryTarget | undefined,
    publisher: Publisher,
    source: Source,
  ): Promise<Outcome>;
  /** Handles a message of the deliveries queue: a retry, a deferral come back, or a queued delivery. */
  handle(message: ConsumeMessage, publisher: Publisher): Promise<Disposition>;
}

/**
 * One attempt of one delivery (spec 4.4, 6.2–6.4; D7). The webhook is read fresh for every attempt,
 * so a changed URL or secret applies to the next one and a switch-off drops what is still queued.
 */
export function createDeliverer(deps: DelivererDeps): Deliverer {
  const { store, sender, endpoints, policy, topology, logger } = deps;

  const publish = (publisher: Publisher, queue: string, delivery: DeliveryMessage) =>
    publisher.publish('', queue, Buffer.from(JSON.stringify(delivery)), {
      contentType: 'application/json',
      messageId: delivery.event.id,
      type: delivery.event.type,
      headers: { webhook_id: delivery.webhook_id },
    });

  const prepare = (delivery: DeliveryMessage, target: DeliveryTarget | undefined): Outcome | undefined => {
    if (!target) return { kind: 'dropped', reason: 'webhook_gone' };
    if (target.disabled_at || target.epoch !== delivery.epoch)
      return { kind: 'dropped', reason: 'webhook_off' };
    if (!target.event_types.includes(delivery.event.type)) return { kind: 'dropped', reason: 'unsubscribed' };
    return undefined;
  };

  const record = (delivery: DeliveryMessage, result: AttemptResult) =>
    store.record({
      webhookId: delivery.webhook_id,
      eventId: delivery.event.id,
      eventType: delivery.event.type,
      attempt: delivery.attempt,
      attemptedAt: result.at,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      error: result.error,
      responseBody: result.body,
    });

  const handleSuccess = async (delivery: DeliveryMessage, result: AttemptResult): Promise<Outcome> => {
    await record(delivery, result);
    return { kind: 'delivered', result };
  };

  const handleFailure = async (
    delivery: DeliveryMessage,
    result: AttemptResult,
    publisher: Publisher,
  ): Promise<Outcome> => {
    await record(delivery, result);
    const retry = nextRetry(policy, delivery.attempt, delivery.first_failed_at, result.at.getTime());
    if (!retry) return { kind: 'gave_up', result };
    // Confirmed by RabbitMQ before the current copy is acked. The next attempt starts with no
    // busy deferrals: they back off within one attempt.
    const { busy_deferrals: _, ...rest } = delivery;
    await publish(publisher, topology.retryQueue(retry.delayMs), {
      ...rest,
      attempt: delivery.attempt + 1,
      first_failed_at: retry.firstFailedAt,
    });
    return { kind: 'retry_scheduled', result, delayMs: retry.delayMs };
  };

  const handleDeferred = async (
    delivery: DeliveryMessage,
    reason: DeferReason,
    publisher: Publisher,
  ): Promise<Outcome> => {
    // Not an attempt: nothing was sent, so the attempt number and the window stay as they were.
    const busyBefore = delivery.busy_deferrals ?? 0;
    const delayMs = deferDelay(policy, reason, busyBefore);
    await publish(
      publisher,
      topology.retryQueue(delayMs),
      reason === 'endpoint_busy' ? { ...delivery, busy_deferrals: busyBefore + 1 } : delivery,
    );
    return { kind: 'deferred', reason, delayMs };
  };

  const handleQueued = async (delivery: DeliveryMessage, publisher: Publisher): Promise<Outcome> => {
    await publish(publisher, topology.deliveriesQueue, delivery);
    return { kind: 'queued', reason: 'endpoint_busy' };
  };

  const attempt: Deliverer['attempt'] = async (delivery, target, publisher, source) => {
    let outcome = prepare(delivery, target);
    if (!outcome) {
      const guarded = await endpoints.run(
        delivery.webhook_id,
        () => sender.send({ url: target!.url, event: delivery.event, secrets: target!.secrets }),
        source,
      );
      if ('deferred' in guarded) {
        // No place in line at fan-out queues the delivery, so its event is not held by one busy
        // webhook; none for a queued delivery means the webhook is slow: it goes round a delay queue.
        outcome =
          guarded.deferred === 'endpoint_busy' && source === 'fan_out'
            ? await handleQueued(delivery, publisher)
            : await handleDeferred(delivery, guarded.deferred, publisher);
      } else if (guarded.attempted.error === null) outcome = await handleSuccess(delivery, guarded.attempted);
      else outcome = await handleFailure(delivery, guarded.attempted, publisher);
    }
    log(logger, delivery, outcome);
    deps.onOutcome?.(outcome, delivery);
    return outcome;
  };

  return {
    attempt,
    async handle(message, publisher) {
      const delivery = parseContent(message);
      if (!isValid('DeliveryMessage', delivery)) {
        logger.error({ messageId: message.properties.messageId }, 'malformed delivery message parked');
        return 'park';
      }
      await attempt(delivery, await store.target(delivery.webhook_id), publisher, 'deliveries_queue');
      return 'ack';
    },
  };
}

function log(logger: Logger, delivery: DeliveryMessage, outcome: Outcome): void {
  const fields = {
    eventId: delivery.event.id,
    webhookId: delivery.webhook_id,
    attempt: delivery.attempt,
    outcome: outcome.kind,
    ...('result' in outcome && {
      status: outcome.result.statusCode,
      error: outcome.result.error,
      durationMs: outcome.result.durationMs,
    }),
    ...('reason' in outcome && { reason: outcome.reason }),
    ...('delayMs' in outcome && { retryInMs: outcome.delayMs }),
  };
  // Delivered and queued are the normal course; the rest is what an operator looks for.
  if (outcome.kind === 'delivered' || outcome.kind === 'queued') logger.debug(fields, outcome.kind);
  else if (outcome.kind === 'gave_up') logger.warn(fields, 'delivery gave up: retry window passed');
  else logger.info(fields, `delivery ${outcome.kind.replace('_', ' ')}`);
}
