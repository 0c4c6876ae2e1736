import type { ConsumeMessage } from 'amqplib';
import { capturedAtOf, deliveryMessageProperties, type Topology } from '@trips/broker';
import { isTestEventId, isValid, type DeliveryMessage } from '@trips/contracts';
import type { DeliveryTarget } from '@trips/db/webhooks';
import { atMostEvery, tracing, type Carrier, type Logger } from '@trips/runtime';
import type { DeliveryPolicy } from './config.ts';
import { parseContent, type Disposition, type Publisher } from './consumer.ts';
import type { AttemptResult, Sender } from './sender.ts';
import type { DeferReason, Endpoints } from './endpoints.ts';
import { nextRetry } from './schedule.ts';
import type { DeliveryStore, HoldOptions } from './store.ts';
import type { Outcome } from './outcome.ts';
import { headersOf, traceAttempt } from './tracing.ts';

export type { Outcome } from './outcome.ts';

export interface DelivererDeps {
  store: DeliveryStore;
  sender: Sender;
  endpoints: Endpoints;
  lanes: LaneEntry;
  policy: DeliveryPolicy;
  topology: Topology;
  logger: Logger;
  /** Told about every outcome (metrics, tests), with the capture time of the event's change when known. */
  onOutcome?: (outcome: Outcome, delivery: DeliveryMessage, source: Source, capturedAt?: Date) => void;
}

/**
 * Where a delivery comes from: a first attempt at fan-out or a retry from the deliveries queue,
 * both made while their RabbitMQ message is held (inline), or a delivery claimed from its
 * webhook's lane.
 */
export type Source = 'fan_out' | 'deliveries_queue' | 'lane';

/** What the deliverer needs of the webhook lanes (lanes.ts). */
export interface LaneEntry {
  /** Puts the delivery in its webhook's lane; resolves once committed. */
  hold(delivery: DeliveryMessage, options?: HoldOptions): Promise<void>;
}

export interface Deliverer {
  /**
   * One attempt of the delivery to its webhook as just read (undefined: the webhook is gone).
   * `capturedAt`, when its event's change was captured (from the message's headers or the lane's
   * row), goes with a retry or a hold, so the lag from the writer's commit is observed whenever the
   * 2xx comes; absent when not known (nothing is observed then).
   */
  attempt(
    delivery: DeliveryMessage,
    target: DeliveryTarget | undefined,
    publisher: Publisher,
    source: Source,
    capturedAt?: Date,
  ): Promise<Outcome>;
  /** Handles a message of the deliveries queue: a retry whose delay has passed. */
  handle(message: ConsumeMessage, publisher: Publisher): Promise<Disposition>;
}

/**
 * One attempt of one delivery (spec 4.4, 6.2–6.4; D7). The webhook is read fresh for every attempt,
 * so a changed URL or secret applies to the next one and a switch-off drops what is still queued.
 *
 * A delivery is attempted at once when its webhook has room, or after a short wait for a slot of a
 * healthy webhook (endpoints.ts); otherwise it waits in the webhook's lane (lanes.ts) and the
 * message that brought it is acked, so no queue shared by every agency waits on one webhook. The
 * lane and the waiting deliveries take turns for the webhook's slots, so a steady stream cannot
 * starve its backlog.
 */
export function createDeliverer(deps: DelivererDeps): Deliverer {
  const { store, sender, endpoints, lanes, policy, topology, logger } = deps;
  const refusedRetryNoticeDue = atMostEvery(60_000);

  const publish = (publisher: Publisher, queue: string, delivery: DeliveryMessage, capturedAt?: Date) => {
    const properties = deliveryMessageProperties(delivery, capturedAt);
    // Tracing on: the retry carries the failed attempt's context through its delay queue.
    tracing.tracer?.injectActive(properties.headers as Carrier);
    return publisher.publish('', queue, Buffer.from(JSON.stringify(delivery)), properties);
  };

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
      requestSignature: result.signature ?? null,
      // A recorded event's body is its event record, rebuilt from `events` when shown; only one
      // in no record keeps what was sent (migration 0018).
      requestBody: isTestEventId(delivery.event.id) ? JSON.stringify(delivery.event) : null,
      responseHeaders: result.responseHeaders ?? null,
      errorDetail: result.errorDetail ?? null,
    });

  const handleSuccess = async (delivery: DeliveryMessage, result: AttemptResult): Promise<Outcome> => {
    await record(delivery, result);
    return { kind: 'delivered', result };
  };

  const handleFailure = async (
    delivery: DeliveryMessage,
    result: AttemptResult,
    publisher: Publisher,
    capturedAt: Date | undefined,
  ): Promise<Outcome> => {
    await record(delivery, result);
    const retry = nextRetry(policy, delivery.attempt, delivery.first_failed_at, result.at.getTime());
    if (!retry) return { kind: 'gave_up', result };
    // Confirmed by RabbitMQ before the current copy is acked (or released from its lane).
    // busy_deferrals: written by dispatchers before lanes; it means nothing now.
    const { busy_deferrals: _, ...rest } = delivery;
    const next = { ...rest, attempt: delivery.attempt + 1, first_failed_at: retry.firstFailedAt };
    try {
      await publish(publisher, topology.retryQueue(retry.delayMs), next, capturedAt);
    } catch (error) {
      // The delay queue is full (or the channel went): the retry waits out its delay in its lane.
      if (refusedRetryNoticeDue())
        logger.warn(
          { err: error, webhookId: delivery.webhook_id },
          'retry not queued; held in its lane instead',
        );
      await lanes.hold(next, { notBefore: new Date(result.at.getTime() + retry.delayMs), capturedAt });
    }
    return { kind: 'retry_scheduled', result, delayMs: retry.delayMs };
  };

  const handleHeld = async (delivery: DeliveryMessage, reason: DeferReason, capturedAt: Date | undefined) => {
    // Not an attempt: nothing was sent, so the attempt number and the window stay as they were.
    await lanes.hold(delivery, { capturedAt });
    return { kind: 'held', reason } as const;
  };

  const attemptOnce: Deliverer['attempt'] = async (delivery, target, publisher, source, capturedAt) => {
    let outcome = prepare(delivery, target);
    if (!outcome) {
      const guarded = await endpoints.run(
        delivery.webhook_id,
        () => sender.send({ url: target!.url, event: delivery.event, secrets: target!.secrets }),
        source !== 'lane',
      );
      if ('deferred' in guarded) {
        outcome =
          source === 'lane'
            ? { kind: 'deferred', reason: guarded.deferred }
            : await handleHeld(delivery, guarded.deferred, capturedAt);
      } else if (guarded.attempted.error === null) outcome = await handleSuccess(delivery, guarded.attempted);
      else outcome = await handleFailure(delivery, guarded.attempted, publisher, capturedAt);
    }
    log(logger, delivery, outcome);
    deps.onOutcome?.(outcome, delivery, source, capturedAt);
    return outcome;
  };
  const attempt: Deliverer['attempt'] = (delivery, target, publisher, source, capturedAt) => {
    const once = () => attemptOnce(delivery, target, publisher, source, capturedAt);
    const tracer = tracing.tracer;
    return tracer ? traceAttempt(tracer, delivery, source, once) : once();
  };

  return {
    attempt,
    async handle(message, publisher) {
      const delivery = parseContent(message);
      if (!isValid('DeliveryMessage', delivery)) {
        logger.error({ messageId: message.properties.messageId }, 'malformed delivery message parked');
        return 'park';
      }
      const target = await store.target(delivery.webhook_id);
      const capturedAt = capturedAtOf(message.properties.headers as Record<string, unknown> | undefined);
      const run = () => attempt(delivery, target, publisher, 'deliveries_queue', capturedAt);
      // Tracing on: the attempt continues the trace of the attempt that scheduled this retry.
      const tracer = tracing.tracer;
      await (tracer ? tracer.withCarried(delivery.event.id, headersOf(message), run) : run());
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
  // Delivered, held and deferred are the normal course (lanes.ts sums up held lanes per webhook);
  // the rest is what an operator looks for.
  if (outcome.kind === 'delivered' || outcome.kind === 'held' || outcome.kind === 'deferred')
    logger.debug(fields, outcome.kind);
  else if (outcome.kind === 'gave_up') logger.warn(fields, 'delivery gave up: retry window passed');
  else logger.info(fields, `delivery ${outcome.kind.replace('_', ' ')}`);
}
