import amqp from 'amqp-connection-manager';
import amqplib, { type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, LogCapture, randomAmqpPrefix, waitFor } from '@trips/testkit';
import { Consumer } from '../src/client/index.ts';

// A quorum queue can count messages as checked out to a consumer whose channel never got them, or
// whose nack never reached the queue (docs/operations.md, "Supported RabbitMQ versions"). That cannot
// be caused at will, so these tests make the same state from the client's side: the first channel's
// deliveries are swallowed before the Consumer sees them. RabbitMQ then counts them as unacknowledged
// on that channel and the Consumer holds nothing, as after the broker's loss. What this proves: an
// idle consumer's channel is reopened, which gives such messages back, and a message being handled
// is never given back by it. What it cannot: that RabbitMQ strands messages (its source shows the
// windows), or that this was the failover test's failure.
const IDLE_MS = 1_000;
const prefix = randomAmqpPrefix();
const queue = `${prefix}idle`;
let admin: ChannelModel;

beforeAll(async () => {
  admin = await amqplib.connect(amqpUrl);
  const ch = await admin.createChannel();
  await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.close();
});
afterAll(async () => {
  await admin.close();
  await deleteAmqpObjects({ queues: [queue] });
});

async function publish(...bodies: string[]): Promise<void> {
  const ch = await admin.createConfirmChannel();
  for (const body of bodies) ch.sendToQueue(queue, Buffer.from(body), { persistent: true });
  await ch.waitForConfirms();
  await ch.close();
}

/** Messages ready in the queue (those delivered and not yet acknowledged are not counted). */
async function ready(): Promise<number> {
  const ch = await admin.createChannel();
  const { messageCount } = await ch.checkQueue(queue);
  await ch.close();
  return messageCount;
}

/**
 * A Consumer of the queue whose first channel swallows every delivery (stranded: unacked on the
 * broker, never handled). `handle` resolves after `holdMs`.
 */
function start(options: { idleReopenMs: number; strand: boolean; holdMs?: number }) {
  const connection = amqp.connect([amqpUrl]);
  const handled: { body: string; redelivered: boolean }[] = [];
  let channels = 0;
  const logs = new LogCapture();
  const consumer = new Consumer(
    connection,
    {
      name: 'test',
      queue,
      prefetch: 3,
      idleReopenMs: options.idleReopenMs,
      setup: async (ch: ConfirmChannel) => {
        channels++;
        if (!(options.strand && channels === 1)) return;
        const consume = ch.consume.bind(ch);
        ch.consume = (q: string, onMessage: (m: ConsumeMessage | null) => void, opts?: object) =>
          consume(q, (m) => (m === null ? onMessage(m) : undefined), opts);
      },
      handle: async (message) => {
        await new Promise((resolve) => setTimeout(resolve, options.holdMs ?? 0));
        handled.push({ body: message.content.toString(), redelivered: message.fields.redelivered });
        return 'ack';
      },
    },
    logs.logger,
  );
  return {
    consumer,
    handled,
    channels: () => channels,
    stop: async () => {
      await consumer.stop();
      await connection.close();
    },
  };
}

test('messages stranded on an idle consumer channel come back once the channel is reopened, each handled once', async () => {
  await publish('a', 'b', 'c'); // the prefetch's worth: nothing later would reveal the gap
  const started = Date.now();
  const c = start({ idleReopenMs: IDLE_MS, strand: true });
  try {
    await c.consumer.ready();
    await waitFor(() => c.handled.length === 3, { timeoutMs: 10_000, what: 'the stranded messages handled' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS);
    expect(c.handled.map((h) => h.body).sort()).toEqual(['a', 'b', 'c']);
    expect(c.handled.every((h) => h.redelivered)).toBe(true); // given back by the close
    expect(c.channels()).toBe(2);

    // The new channel consumes as the old one did.
    await publish('d');
    await waitFor(() => c.handled.length === 4, { timeoutMs: 5_000, what: 'a new message handled' });
    expect(c.handled[3]).toEqual({ body: 'd', redelivered: false });
  } finally {
    await c.stop();
  }
});

test('without the reopening, the stranded messages stay unacknowledged for as long as the channel lives', async () => {
  await publish('a', 'b', 'c');
  const c = start({ idleReopenMs: 0, strand: true });
  try {
    await c.consumer.ready();
    await new Promise((resolve) => setTimeout(resolve, 3 * IDLE_MS));
    expect(c.handled).toEqual([]);
    expect(await ready()).toBe(0); // all three held as delivered on the first channel
    expect(c.channels()).toBe(1);
  } finally {
    await c.stop(); // the channel closes: they go back to the queue
  }
  await waitFor(async () => (await ready()) === 3, { what: 'the three back in the queue' });
  const drain = start({ idleReopenMs: 0, strand: false });
  await drain.consumer.ready();
  await waitFor(() => drain.handled.length === 3, { what: 'the queue drained' });
  await drain.stop();
});

test('a message being handled longer than the idle time is not given back: handled once', async () => {
  await publish('slow');
  const c = start({ idleReopenMs: IDLE_MS / 2, strand: false, holdMs: 2.5 * IDLE_MS });
  try {
    await c.consumer.ready();
    await waitFor(() => c.handled.length === 1, { timeoutMs: 10_000, what: 'the slow message handled' });
    expect(c.channels()).toBe(1); // held throughout: the channel stayed
    await waitFor(() => c.channels() >= 2, {
      timeoutMs: 5_000,
      what: 'the idle channel reopened afterwards',
    });
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    expect(c.handled).toEqual([{ body: 'slow', redelivered: false }]);
  } finally {
    await c.stop();
  }
  expect(await ready()).toBe(0);
});
