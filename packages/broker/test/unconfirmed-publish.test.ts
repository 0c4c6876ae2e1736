import amqp from 'amqp-connection-manager';
import amqplib, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, LogCapture, randomAmqpPrefix, waitFor } from '@trips/testkit';
import { Consumer } from '../src/client/index.ts';

// A channel whose publishes RabbitMQ never confirms while its connection lives: on RabbitMQ 3.10 a
// channel that missed a quorum queue's leader change goes on sending that queue's enqueues to the
// old leader (docs/operations.md, "Supported RabbitMQ versions"). That cannot be caused at will, so
// the test makes the same state from the client's side: the first channel's confirms are swallowed.
// What this proves: a handler's publish fails after publishTimeoutMs instead of holding its message
// for ever, the consumer moves to a new channel once the messages in hand are settled, and the
// message is handled there. What it cannot: that RabbitMQ leaves a channel's publishes unconfirmed.
const TIMEOUT_MS = 300;
const SLOW_MS = 1_500;
const prefix = randomAmqpPrefix();
const input = `${prefix}unconfirmed.in`;
const output = `${prefix}unconfirmed.out`;
let admin: ChannelModel;

beforeAll(async () => {
  admin = await amqplib.connect(amqpUrl);
  const ch = await admin.createChannel();
  for (const queue of [input, output])
    await ch.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await ch.close();
});
afterAll(async () => {
  await admin.close();
  await deleteAmqpObjects({ queues: [input, output] });
});

async function publish(...bodies: string[]): Promise<void> {
  const ch = await admin.createConfirmChannel();
  for (const body of bodies) ch.sendToQueue(input, Buffer.from(body), { persistent: true });
  await ch.waitForConfirms();
  await ch.close();
}

/** Takes every message of a queue; answers their bodies. */
async function take(queue: string): Promise<string[]> {
  const ch = await admin.createChannel();
  const bodies: string[] = [];
  for (let m = await ch.get(queue); m; m = await ch.get(queue)) {
    bodies.push(m.content.toString());
    ch.ack(m);
  }
  await ch.close();
  return bodies;
}

test('a publish never confirmed fails in time; the consumer settles what it holds, moves to a new channel, and the message is handled there', async () => {
  await publish('slow', 'a');
  const connection = amqp.connect([amqpUrl]);
  const logs = new LogCapture();
  let channels = 0;
  const handled: { body: string; redelivered: boolean; channel: number }[] = [];
  const consumer = new Consumer(
    connection,
    {
      name: 'test',
      queue: input,
      prefetch: 2,
      publishTimeoutMs: TIMEOUT_MS,
      maxPauseMs: 50,
      setup: async (ch: ConfirmChannel) => {
        if (++channels === 1) ch.removeAllListeners('ack');
      },
      handle: async (message, publisher) => {
        const channel = channels;
        const body = message.content.toString();
        // 'slow' is in hand when the other's publish times out: it must be settled, not given back.
        if (body === 'slow') await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
        else await publisher.publish('', output, message.content, {});
        handled.push({ body, redelivered: message.fields.redelivered, channel });
        return 'ack';
      },
    },
    logs.logger,
  );
  try {
    await consumer.ready();
    await waitFor(() => handled.some((h) => h.body === 'a'), {
      timeoutMs: 10_000,
      what: "'a' handled, its publish confirmed",
    });
    await new Promise((resolve) => setTimeout(resolve, 500)); // nothing more arrives
  } finally {
    await consumer.stop();
    await connection.close();
  }
  expect(handled).toEqual([
    { body: 'slow', redelivered: false, channel: 1 },
    { body: 'a', redelivered: true, channel: 2 },
  ]);
  expect(channels).toBe(2);
  expect(await take(input)).toEqual([]);
  // Published on both channels (the first one's confirm was swallowed, not its publish).
  expect(await take(output)).toEqual(['a', 'a']);
  expect(logs.lines.filter((l) => l.includes('a publish went unconfirmed past its timeout'))).toHaveLength(1);
}, 30_000);
