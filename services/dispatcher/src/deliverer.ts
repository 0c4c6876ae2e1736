import { capturedAtOf, deliveryMessageProperties, type Topology } from '@trips/broker';
import { parseContent, type ConsumeMessage, type Disposition, type Publisher } from '@trips/broker/client';
import { isTestEventId, isValid, type DeliveryMessage } from '@trips/contracts';
import type { NewAttempt } from '@trips/db/webhook-attempts';
import { atMostEvery, tracing, type Carrier, type Logger } from '@trips/runtime';
import type { DeliveryPolicy } from './config.ts';
import type { Endpoints } from './endpoint/endpoints.ts';
import { followUp, type DeferReason } from './lifecycle.ts';
import type { Outcome } from './outcome.ts';
import type { AttemptResult, Sender } from './sender.ts';
import type { DeliveryStore, HoldOptions } from './store.ts';
import type { Target } from './targets-cache.ts';
import { headersOf, traceAttempt } from './tracing.ts';

export type { Outcome } from './outcome.ts';

/** What the deliverer needs of the webhook lanes: to hold a delivery in one (lanes.ts `laneEntry`). */
export interface LaneEntry {
  /** Puts the delivery in its webhook's lane; resolves once committed. */
  hold(delivery: DeliveryMessage, options?: HoldOptions): Promise<void>;
}

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
  /** Told how long a delivery waited in memory for its endpoint's slot, and whether it then went out or to its lane. */
  onLineWait?: (ms: number, then: LineWaitEnd) => void;
}

/** What became of a delivery that waited in its endpoint's line: a slot, or its webhook's lane. */
export const LINE_WAIT_ENDS = ['attempted', 'held'] as const;
export type LineWaitEnd = (typeof LINE_WAIT_ENDS)[number];

/**
 * Where a delivery comes from: a first attempt at fan-out or a retry from the deliveries queue,
 * both made while their RabbitMQ message is held (inline), or a delivery claimed from its
 * webhook's lane.
 */
export type Source = 'fan_out' | 'deliveries_queue' | 'lane';

/** One delivery to attempt, as its caller has it. */
export interface AttemptRequest {
  delivery: DeliveryMessage;
  /** The webhook as just read; undefined: it is gone. */
  target: Target | undefined;
  /** Where a retry is published: the message's own channel, or the lanes'. */
  publisher: Publisher;
  source: Source;
  /**
   * When its event's change was captured (the message's headers, the lane's row), carried with a
   * retry or a hold so the lag from the writer's commit is observed whenever the 2xx comes.
   */
  capturedAt?: Date;
  /** The lane row it was claimed from (source `lane`): the deliverer settles the row. */
  heldId?: number;
}

/** Where the delivery is while it is attempted, and how it moves on from there. */
interface Place {
  /** It waits in its webhook's lane, as `delivery`, not before `notBefore`. */
  toLane(delivery: DeliveryMessage, notBefore?: Date): Promise<void>;
  /** It is done with here: delivered, dropped, given up, or in a delay queue now. */
  done(): Promise<void>;
  /** It was not attempted: it stays in its lane, or goes there, not before `until`. */
  notAttempted(delivery: DeliveryMessage, until?: Date): Promise<void>;
}

/**
 * One attempt of one delivery (spec 4.4, 6.2–6.4; D7, D10), carried out as lifecycle.ts decides:
 * `prepare` (drop what is no longer wanted) → the endpoint's admission → send → `followUp`, one
 * handler each, and the delivery moved to where it waits next (its lane, a delay queue) before
 * the message or lane row that brought it is settled. The webhook comes as its caller read it
 * (targets-cache.ts says how fresh that is).
 */
export class Deliverer {
  private readonly deps: DelivererDeps;
  private readonly refusedRetryNoticeDue = atMostEvery(60_000);
  private readonly pauseFailureNoticeDue = atMostEvery(60_000);

  constructor(deps: DelivererDeps) {
    this.deps = deps;
  }

  /** One attempt of the delivery, or none and why; the delivery ends up where its outcome says. */
  attempt(request: AttemptRequest): Promise<Outcome> {
    const tracer = tracing.tracer;
    return tracer
      ? traceAttempt(tracer, request.delivery, request.source, () => this.attemptOnce(request))
      : this.attemptOnce(request);
  }

  /** Handles a message of the deliveries queue: a retry whose delay has passed. */
  async handle(message: ConsumeMessage, publisher: Publisher): Promise<Disposition> {
    const delivery = parseContent(message);
    if (!isValid('DeliveryMessage', delivery)) {
      this.deps.logger.error(
        { messageId: message.properties.messageId },
        'malformed delivery message parked',
      );
      return 'park';
    }
    const target = await this.deps.store.target(delivery.webhook_id);
    const capturedAt = capturedAtOf(message.properties.headers as Record<string, unknown> | undefined);
    const run = () => this.attempt({ delivery, target, publisher, source: 'deliveries_queue', capturedAt });
    // Tracing on: the attempt continues the trace of the attempt that scheduled this retry.
    const tracer = tracing.tracer;
    await (tracer ? tracer.withCarried(delivery.event.id, headersOf(message), run) : run());
    return 'ack';
  }

  private async attemptOnce(request: AttemptRequest): Promise<Outcome> {
    const { delivery, target, source } = request;
    const place = this.placeOf(request);
    let outcome = prepare(delivery, target);
    if (outcome) await place.done();
    else {
      const guarded = await this.deps.endpoints.run(
        delivery.webhook_id,
        target!,
        () =>
          this.deps.sender.send({
            url: target!.url,
            event: delivery.event,
            secrets: target!.secrets,
            ed25519Keys: target!.signing_keys,
          }),
        source !== 'lane',
      );
      if (guarded.lineWaitMs !== undefined)
        this.deps.onLineWait?.(guarded.lineWaitMs, 'deferred' in guarded ? 'held' : 'attempted');
      outcome =
        'deferred' in guarded
          ? await notAttempted(request, place, guarded.deferred, guarded.until)
          : await this.settle(request, place, guarded.attempted, guarded.pause);
    }
    log(this.deps.logger, delivery, outcome);
    this.deps.onOutcome?.(outcome, delivery, source, request.capturedAt);
    return outcome;
  }

  /** An attempt was made: record it, and move the delivery to where its follow-up says. */
  private async settle(
    request: AttemptRequest,
    place: Place,
    result: AttemptResult,
    pause: { until: number; longer: boolean } | undefined,
  ): Promise<Outcome> {
    const { delivery, publisher, capturedAt } = request;
    const next = followUp(this.deps.policy, delivery, result, pause?.until);
    const dueAt =
      next.kind === 'wait_in_lane'
        ? next.until
        : next.kind === 'wait_in_delay_queue'
          ? next.dueAt
          : undefined;
    await Promise.all([
      this.deps.store.record(attemptRow(delivery, result, dueAt)),
      pause?.longer && this.sharePause(delivery.webhook_id, result, pause.until),
    ]);
    switch (next.kind) {
      case 'delivered':
        await place.done();
        return { kind: 'delivered', result };
      case 'gave_up':
        await place.done();
        return { kind: 'gave_up', result };
      case 'wait_in_lane':
        await place.toLane(next.next, new Date(next.until));
        return { kind: 'asked_to_wait', result, until: new Date(next.until) };
      case 'wait_in_delay_queue':
        try {
          // Confirmed by RabbitMQ before the current copy is acked (or released from its lane).
          await this.publishRetry(publisher, next.delayMs, next.next, capturedAt);
          await place.done();
        } catch (error) {
          // The delay queue is full (or the channel went): the retry waits out its delay in its lane.
          if (this.refusedRetryNoticeDue())
            this.deps.logger.warn(
              { err: error, webhookId: delivery.webhook_id },
              'retry not queued; held in its lane instead',
            );
          await place.toLane(next.next, new Date(next.dueAt));
        }
        return { kind: 'retry_scheduled', result, delayMs: next.delayMs, dueAt: new Date(next.dueAt) };
    }
  }

  private publishRetry(publisher: Publisher, delayMs: number, delivery: DeliveryMessage, capturedAt?: Date) {
    const properties = deliveryMessageProperties(delivery, capturedAt);
    // Tracing on: the retry carries the failed attempt's context through its delay queue.
    tracing.tracer?.injectActive(properties.headers as Carrier);
    const queue = this.deps.topology.retryQueue(delayMs);
    return publisher.publish('', queue, Buffer.from(JSON.stringify(delivery)), properties);
  }

  /** Tells every dispatcher of a pause this one learned first; the attempt settles either way. */
  private async sharePause(webhookId: string, result: AttemptResult, until: number): Promise<void> {
    try {
      await this.deps.store.pause(webhookId, {
        forMs: until - Date.now(),
        status: result.statusCode!,
        retryAfterMs: result.backPressure?.retryAfterMs ?? null,
      });
    } catch (error) {
      if (this.pauseFailureNoticeDue())
        this.deps.logger.warn({ err: error, webhookId }, 'pause not shared with the other dispatchers');
    }
  }

  private placeOf({ heldId, capturedAt }: AttemptRequest): Place {
    const { lanes, store } = this.deps;
    if (heldId === undefined)
      return {
        toLane: (delivery, notBefore) => lanes.hold(delivery, { notBefore, capturedAt }),
        done: async () => {},
        notAttempted: (delivery, until) => lanes.hold(delivery, { notBefore: until, capturedAt }),
      };
    return {
      toLane: (delivery, notBefore) => store.reschedule(heldId, delivery, notBefore ?? new Date()),
      done: () => store.release(heldId),
      notAttempted: () => store.unclaim(heldId),
    };
  }
}

/** Whether the delivery is still wanted by its webhook as just read; the outcome if not. */
function prepare(delivery: DeliveryMessage, target: Target | undefined): Outcome | undefined {
  if (!target) return { kind: 'dropped', reason: 'webhook_gone' };
  if (target.disabled_at || target.epoch !== delivery.epoch)
    return { kind: 'dropped', reason: 'webhook_off' };
  if (!target.event_types.includes(delivery.event.type)) return { kind: 'dropped', reason: 'unsubscribed' };
  return undefined;
}

/** Not attempted: nothing was sent, so the attempt number and the window stay as they were. */
async function notAttempted(request: AttemptRequest, place: Place, reason: DeferReason, until?: number) {
  await place.notAttempted(request.delivery, until === undefined ? undefined : new Date(until));
  return request.source === 'lane'
    ? ({ kind: 'deferred', reason } as const)
    : ({ kind: 'held', reason } as const);
}

/** The attempts log's row of an attempt, with when its delivery is due again (null: it is not). */
function attemptRow(delivery: DeliveryMessage, result: AttemptResult, dueAt: number | undefined): NewAttempt {
  return {
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
    nextAttemptAt: dueAt === undefined ? null : new Date(dueAt),
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
    ...('until' in outcome && { until: outcome.until }),
  };
  // Delivered, held and deferred are the normal course (lanes.ts sums up held lanes per webhook);
  // the rest is what an operator looks for.
  if (outcome.kind === 'delivered' || outcome.kind === 'held' || outcome.kind === 'deferred')
    logger.debug(fields, outcome.kind);
  else if (outcome.kind === 'gave_up') logger.warn(fields, 'delivery gave up: retry window passed');
  else if (outcome.kind === 'asked_to_wait') logger.info(fields, askedToWaitWords(outcome.result));
  else logger.info(fields, `delivery ${outcome.kind.replace('_', ' ')}`);
}

/** "asked to wait: 429, Retry-After 1 s", as the delivery log says it too. */
function askedToWaitWords(result: AttemptResult): string {
  const after = result.backPressure?.retryAfterMs;
  const retryAfter = after === undefined ? 'no Retry-After' : `Retry-After ${Math.round(after / 1000)} s`;
  return `asked to wait: ${result.statusCode}, ${retryAfter}`;
}
