import type { Channel } from 'amqplib';

/**
 * The dispatcher's RabbitMQ topology, in one place:
 *
 *   trips.events (topic, the recorder's) ──#──► trips.dispatcher.events      fan-out: first attempts
 *   trips.events.express (topic, the recorder's) ──#──► trips.dispatcher.events.express   the same, for quiet agencies
 *   trips.dispatcher.deliveries ◄── owners' redeliveries and test events ── (default exchange)
 *        │ attempt fails                                                   │ TTL expires: dead-lettered back
 *        └──► trips.dispatcher.retry.<delay>ms (one per distinct delay) ──┘
 *   trips.dispatcher.parked  ◄── messages that cannot be handled (malformed, or redelivered too often)
 *
 * The events queue is bounded (QUEUE_LIMITS): when it is full, RabbitMQ refuses the recorder's
 * publishes, and the events wait in Postgres, where the recorder takes every agency's oldest first.
 * So one agency's bulk import waits there, not in the queue ahead of everyone else's events. Events
 * of agencies without a backlog skip even that: the recorder publishes them to the express queue,
 * which no import ever fills, and the dispatcher consumes both. The delay queues are bounded too,
 * so a long outage's retries cannot fill the broker's memory: a refused retry waits out its delay
 * in its webhook's lane in Postgres (deliverer.ts).
 *
 * Every queue is a durable quorum queue, so a RabbitMQ cluster replicates it. Dead-lettering uses the
 * at-least-once strategy, which needs reject-publish overflow: a message leaves a delay queue only
 * once the delivery queue has confirmed it, so no hop can lose one. A delay queue's name carries its
 * delay because a queue's TTL cannot change once declared: a new WEBHOOK_RETRY_DELAYS declares new
 * queues beside the old ones, which drain by themselves. Only features of both RabbitMQ 3.10 and 4.x.
 */
export interface Topology {
  eventsExchange: string;
  eventsQueue: string;
  /** Where the recorder publishes quiet agencies' events (its express.ts): never behind an import. */
  expressExchange: string;
  expressQueue: string;
  deliveriesQueue: string;
  parkedQueue: string;
  retryQueue(delayMs: number): string;
  /** The delay of each delay queue. */
  delaysMs: number[];
  limits: QueueLimits;
}

export interface QueueLimits {
  /**
   * Ready messages in the events queue, and in the express queue: a new event waits behind about
   * this many. A quorum queue takes a whole burst while it is under its bound, so it overshoots by
   * the events the recorder has in flight at most (PUBLISH_IN_FLIGHT in its publish-pace.ts).
   */
  events: number;
  /** Messages in each delay queue at most. */
  retry: number;
}

/**
 * The queues' bounds. The same on every dispatcher, as RabbitMQ refuses to declare a queue again
 * with other arguments. Events: a small fraction of a second of fan-out even on a busy machine, so
 * that a bulk import waits in Postgres, where the recorder takes agencies in turn, rather than in
 * the queue ahead of every other agency's events. Retries: far more than any normal day's failures,
 * well below what a broker holds in memory.
 */
export const QUEUE_LIMITS: QueueLimits = { events: 20, retry: 100_000 };

/**
 * The durable topic exchange the recorder publishes events to (routing key = event type) and the
 * dispatcher's events queue is bound to. `prefix` is AMQP_PREFIX.
 */
export function eventsExchangeName(prefix: string): string {
  return `${prefix}trips.events`;
}

/** The events exchange's twin for quiet agencies' events, bound to the dispatcher's express queue. */
export function expressExchangeName(prefix: string): string {
  return `${prefix}trips.events.express`;
}

export function topology(prefix: string, delaysMs: number[], limits: QueueLimits = QUEUE_LIMITS): Topology {
  const base = `${prefix}trips.dispatcher`;
  return {
    limits,
    eventsExchange: eventsExchangeName(prefix),
    eventsQueue: `${base}.events`,
    expressExchange: expressExchangeName(prefix),
    expressQueue: `${base}.events.express`,
    deliveriesQueue: `${base}.deliveries`,
    parkedQueue: `${base}.parked`,
    retryQueue: (delayMs) => `${base}.retry.${delayMs}ms`,
    delaysMs: [...new Set(delaysMs)],
  };
}

/** A message redelivered this often (each time its handler died with the process) is parked. */
const DELIVERY_LIMIT = 20;

const quorum = { 'x-queue-type': 'quorum' };

/** Declares everything; idempotent, run on every (re)connect. */
export async function declareTopology(ch: Channel, t: Topology): Promise<void> {
  const parkOnFailure = {
    ...quorum,
    'x-delivery-limit': DELIVERY_LIMIT,
    'x-dead-letter-exchange': '',
    'x-dead-letter-routing-key': t.parkedQueue,
    'x-dead-letter-strategy': 'at-least-once',
    'x-overflow': 'reject-publish',
  };
  await ch.assertExchange(t.eventsExchange, 'topic', { durable: true });
  await ch.assertQueue(t.parkedQueue, { durable: true, arguments: quorum });
  await ch.assertQueue(t.eventsQueue, {
    durable: true,
    arguments: { ...parkOnFailure, 'x-max-length': t.limits.events },
  });
  await ch.bindQueue(t.eventsQueue, t.eventsExchange, '#');
  await ch.assertExchange(t.expressExchange, 'topic', { durable: true });
  await ch.assertQueue(t.expressQueue, {
    durable: true,
    arguments: { ...parkOnFailure, 'x-max-length': t.limits.events },
  });
  await ch.bindQueue(t.expressQueue, t.expressExchange, '#');
  await ch.assertQueue(t.deliveriesQueue, { durable: true, arguments: parkOnFailure });
  for (const delayMs of t.delaysMs) {
    await ch.assertQueue(t.retryQueue(delayMs), {
      durable: true,
      arguments: {
        ...quorum,
        'x-message-ttl': delayMs,
        'x-max-length': t.limits.retry,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': t.deliveriesQueue,
        'x-dead-letter-strategy': 'at-least-once',
        'x-overflow': 'reject-publish',
      },
    });
  }
}

/** Every queue name, for tests and tools that clean up. */
export function queueNames(t: Topology): string[] {
  return [t.eventsQueue, t.expressQueue, t.deliveriesQueue, t.parkedQueue, ...t.delaysMs.map(t.retryQueue)];
}
