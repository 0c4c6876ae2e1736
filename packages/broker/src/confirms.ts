// What publishing with confirms means to every process that publishes: how long a confirm may take,
// and the errors a publish ends with. Here rather than in the client (./client/), as the settings
// module, which holds no lasting connection, publishes with confirms too.

/**
 * How long a publish waits for RabbitMQ's confirm, unless told otherwise. RabbitMQ under a memory or
 * disk alarm takes publishes and never confirms them, and a channel can leave them unconfirmed for
 * as long as it lives (ConfirmPublisher): without a bound, whatever waits on the confirm (a message
 * held, a batch, an owner's click) would wait for good.
 */
export const PUBLISH_TIMEOUT_MS = 10_000;

/** RabbitMQ did not confirm a publish in time: the message may or may not have reached a queue. */
export class UnconfirmedPublish extends Error {
  constructor(timeoutMs: number) {
    super(`RabbitMQ did not confirm the publish within ${timeoutMs} ms`);
    this.name = 'UnconfirmedPublish';
  }
}

/** RabbitMQ refused the message (basic.nack): a bounded queue it routes to is full. */
export class PublishRefused extends Error {
  constructor() {
    super('RabbitMQ refused the message (basic.nack): a queue it routes to is full');
    this.name = 'PublishRefused';
  }
}

/** amqplib's error for a nacked publish as a PublishRefused; any other error as it is. */
export function refusalOr(error: unknown): unknown {
  return error instanceof Error && error.message === 'message nacked' ? new PublishRefused() : error;
}
