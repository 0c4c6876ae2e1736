import type { Channel, ConsumeMessage } from 'amqplib';
import type { Outcome } from './handling.ts';

/**
 * Settles one channel's messages, acknowledging finished ones together where that is safe. An ack
 * with `multiple` settles every unsettled message up to its delivery tag, so it may only reach
 * below the oldest message still being handled; a finished message above that one is acked on its
 * own straight away, never held back behind a slow one (a hanging endpoint would otherwise hold
 * every later message, and with them the prefetch). Messages finished in the same turn of the
 * event loop share one frame: RabbitMQ spends far less CPU on quorum-queue messages acked several
 * at a time than on each acked alone.
 */
export class ChannelAcks {
  private readonly ch: Channel;
  private readonly onChannelGone: (error: unknown, messages: number) => void;
  /** Delivery tags being handled. RabbitMQ numbers a channel's deliveries upwards, so the first is the oldest. */
  private readonly handling = new Set<number>();
  private finished: ConsumeMessage[] = [];
  private scheduled = false;

  constructor(ch: Channel, onChannelGone: (error: unknown, messages: number) => void) {
    this.ch = ch;
    this.onChannelGone = onChannelGone;
  }

  /** A message has arrived and its handling starts. */
  received(message: ConsumeMessage): void {
    this.handling.add(message.fields.deliveryTag);
  }

  /** Settles a message as its handling came out (Handling.outcome). */
  settle(message: ConsumeMessage, outcome: Outcome): void {
    if (outcome === 'ack') this.ack(message);
    else if (outcome === 'park')
      this.reject(message, { requeue: false }); // dead-lettered to the parked queue
    else if (outcome === 'retry')
      this.reject(message, { requeue: true }); // its own failure: counts
    else this.release(message); // not its fault: does not count (RabbitMQ 4.3+)
  }

  /** Its handling is done: it is acked in this turn's batch. */
  ack(message: ConsumeMessage): void {
    this.handling.delete(message.fields.deliveryTag);
    this.finished.push(message);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /**
   * Failed through a fault of its own, settled at once with basic.reject: returned to its queue when
   * `requeue`, otherwise dead-lettered (parked). Either way it counts towards a quorum queue's
   * delivery limit, on every version: since RabbitMQ 4.3 only a reject counts, a nack does not.
   */
  reject(message: ConsumeMessage, { requeue }: { requeue: boolean }): void {
    this.handling.delete(message.fields.deliveryTag);
    this.send(() => this.ch.reject(message, requeue), 1);
  }

  /**
   * Given back to its queue at once, through no fault of its own (a dependency away, a stop), with
   * basic.nack: since RabbitMQ 4.3 that does not count towards the delivery limit (before, every
   * return counted).
   */
  release(message: ConsumeMessage): void {
    this.handling.delete(message.fields.deliveryTag);
    this.send(() => this.ch.nack(message, false, true), 1);
  }

  /** Sends the acks not yet sent (also called before the channel is closed on purpose). */
  flush(): void {
    this.scheduled = false;
    if (this.finished.length === 0) return;
    const oldestHandled = this.handling.values().next().value ?? Infinity;
    let prefixEnd: ConsumeMessage | undefined;
    const alone: ConsumeMessage[] = [];
    for (const message of this.finished) {
      if (message.fields.deliveryTag > oldestHandled) alone.push(message);
      else if (!prefixEnd || message.fields.deliveryTag > prefixEnd.fields.deliveryTag) prefixEnd = message;
    }
    const count = this.finished.length;
    this.finished = [];
    this.send(() => {
      // Every tag up to prefixEnd is settled or finished: nothing older is being handled.
      if (prefixEnd) this.ch.ack(prefixEnd, true);
      for (const message of alone) this.ch.ack(message);
    }, count);
  }

  private send(frames: () => void, messages: number): void {
    try {
      frames();
    } catch (error) {
      // The channel is gone (a reconnect): RabbitMQ redelivers these messages, which is the
      // at-least-once we want. Settling them on the new channel would name tags it never issued.
      this.onChannelGone(error, messages);
    }
  }
}
