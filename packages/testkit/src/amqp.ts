import { randomBytes } from 'node:crypto';
import amqplib, { type ConfirmChannel } from 'amqplib';
import type { ServiceProcess } from './process.ts';
import { waitFor } from './wait.ts';

/**
 * Tests read the broker from AMQP_URL (the machine's own RabbitMQ, or CI's); one that stops its
 * broker has a node of its own (rabbitmq-cluster.ts) and passes that node's URL to the functions below.
 */
export const amqpUrl = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A random prefix for exchange and queue names, so test files running at once never collide. */
export function randomAmqpPrefix(): string {
  return `test.${randomBytes(4).toString('hex')}.`;
}

export interface ReceivedMessage {
  routingKey: string;
  messageId: string | undefined;
  type: string | undefined;
  headers: Record<string, unknown>;
  persistent: boolean;
  body: unknown;
}

export interface TestQueue {
  name: string;
  /** Every message received so far, in arrival order. */
  messages: ReceivedMessage[];
  /** Stops consuming, deletes the queue and closes the connection. */
  close(): Promise<void>;
}

/**
 * A durable queue bound to each of `exchanges` (asserted as durable topic exchanges) that collects
 * what arrives. Durable so it survives a broker stop_app/start_app; it reconnects and resumes
 * consuming when its connection drops. `close()` deletes it; call it in afterAll.
 */
async function collectMessages(exchanges: readonly string[], url: string): Promise<TestQueue> {
  const name = `${exchanges[0]}.collect.${randomBytes(3).toString('hex')}`;
  const messages: ReceivedMessage[] = [];
  let closed = false;
  let connection: amqplib.ChannelModel | undefined;

  const open = async () => {
    const conn = await amqplib.connect(url);
    conn.on('error', () => {});
    conn.on('close', () => {
      if (!closed) setTimeout(() => void reopen(), 250);
    });
    const ch = await conn.createChannel();
    await ch.assertQueue(name, { durable: true });
    for (const x of exchanges) {
      await ch.assertExchange(x, 'topic', { durable: true });
      await ch.bindQueue(name, x, '#');
    }
    await ch.consume(name, (msg) => {
      if (!msg) return;
      messages.push({
        routingKey: msg.fields.routingKey,
        messageId: msg.properties.messageId as string | undefined,
        type: msg.properties.type as string | undefined,
        headers: (msg.properties.headers ?? {}) as Record<string, unknown>,
        persistent: msg.properties.deliveryMode === 2,
        body: JSON.parse(msg.content.toString('utf8')),
      });
      ch.ack(msg);
    });
    connection = conn;
  };
  const reopen = async () => {
    while (!closed) {
      try {
        await open();
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };
  await open();

  return {
    name,
    messages,
    close: async () => {
      closed = true;
      await deleteAmqpObjects({ queues: [name] }, url);
      await connection?.close().catch(() => {});
    },
  };
}

/**
 * Collects every event the recorder of AMQP prefix `prefix` publishes: to the events exchange, and
 * quiet agencies' to its express twin (@trips/broker's topology.ts).
 */
export function collectEvents(prefix: string, url = amqpUrl): Promise<TestQueue> {
  return collectMessages([`${prefix}trips.events`, `${prefix}trips.events.express`], url);
}

/** One operation on a connection of its own (a long-lived one would not outlast a broker restart). */
export async function onAmqpChannel<T>(
  operation: (ch: ConfirmChannel) => Promise<T>,
  url = amqpUrl,
): Promise<T> {
  const connection = await amqplib.connect(url);
  try {
    return await operation(await connection.createConfirmChannel());
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * Waits until a service has logged `times` refused channel setups (RecoveringChannel's line, in
 * @trips/broker/client), or has exited; the caller then asserts it is still up.
 */
export async function waitForChannelRefusals(running: ServiceProcess, times: number): Promise<void> {
  const refusals = () => running.output.split('setting up the channel failed').length - 1;
  await waitFor(() => running.exitCode !== undefined || refusals() >= times, {
    timeoutMs: 20_000,
    what: 'the declaration refused, and refused again after a pause',
  });
}

/** What stallFirstChannel needs of a connection: amqp-connection-manager's, as the services hold one. */
interface ChannelOpener {
  createChannel(opts?: { setup?: unknown }): unknown;
}

/**
 * Makes the first channel `connection` opens from now on a stalled one: RabbitMQ still gets its
 * publishes, but their confirms never reach the client, as on a channel that missed a quorum queue's
 * leader change (which cannot be caused at will). Answers how many channels it has opened since.
 */
export function stallFirstChannel(connection: ChannelOpener): () => number {
  let channels = 0;
  const createChannel = connection.createChannel.bind(connection);
  connection.createChannel = (opts = {}) => {
    const setup = opts.setup as ((ch: ConfirmChannel) => Promise<void>) | undefined;
    return createChannel({
      ...opts,
      setup: async (ch: ConfirmChannel) => {
        if (++channels === 1) ch.removeAllListeners('ack');
        await setup?.(ch);
      },
    });
  };
  return () => channels;
}

/** Deletes queues and exchanges a test made; missing ones are fine. */
export async function deleteAmqpObjects(
  names: { queues?: string[]; exchanges?: string[] },
  url = amqpUrl,
): Promise<void> {
  const conn = await amqplib.connect(url);
  try {
    for (const q of names.queues ?? []) {
      const ch = await conn.createChannel();
      await ch.deleteQueue(q).catch(() => {});
      await ch.close().catch(() => {});
    }
    for (const x of names.exchanges ?? []) {
      const ch = await conn.createChannel();
      await ch.deleteExchange(x).catch(() => {});
      await ch.close().catch(() => {});
    }
  } finally {
    await conn.close().catch(() => {});
  }
}
