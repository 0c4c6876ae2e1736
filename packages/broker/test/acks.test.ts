import amqplib, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, randomAmqpPrefix, waitFor } from '@trips/testkit';
import { ChannelAcks } from '../src/client/acks.ts';
import { declareWithParked } from './support.ts';

// ChannelAcks against the real broker: a quorum queue with a parked queue behind it, as the
// dispatcher declares them, consumed with a prefetch of 10.
const prefix = randomAmqpPrefix();
const queue = `${prefix}acks`;
const parked = `${prefix}acks.parked`;
let connection: ChannelModel;
/** Each test's consuming connection, closed after it even when the test fails. */
const consumers: ChannelModel[] = [];

beforeAll(async () => {
  connection = await amqplib.connect(amqpUrl);
  const ch = await connection.createChannel();
  await declareWithParked(ch, { queue, parked });
  await ch.close();
});

beforeEach(async () => {
  const ch = await connection.createChannel();
  await ch.purgeQueue(queue);
  await ch.purgeQueue(parked);
  await ch.close();
});

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.close().catch(() => undefined)));
});

afterAll(async () => {
  await connection.close();
  await deleteAmqpObjects({ queues: [queue, parked] });
});

async function publish(count: number): Promise<void> {
  const ch = await connection.createConfirmChannel();
  for (let i = 1; i <= count; i++) ch.sendToQueue(queue, Buffer.from(String(i)));
  await ch.waitForConfirms();
  await ch.close();
}

/** Consumes the first `count` messages with a prefetch of 10, counting the ack calls made. */
async function consume(count: number) {
  const own = await amqplib.connect(amqpUrl);
  consumers.push(own);
  const ch = await own.createChannel();
  await ch.prefetch(10);
  const ackCalls: { body: string; multiple: boolean }[] = [];
  const ack = ch.ack.bind(ch);
  ch.ack = (message: ConsumeMessage, multiple?: boolean) => {
    ackCalls.push({ body: message.content.toString(), multiple: multiple === true });
    ack(message, multiple);
  };
  const acks = new ChannelAcks(ch, () => {});
  const messages: ConsumeMessage[] = [];
  await ch.consume(queue, (message) => {
    if (!message) return;
    acks.received(message);
    messages.push(message);
  });
  await waitFor(() => messages.length === count, { what: `${count} messages` });
  return { own, ch, acks, messages, ackCalls, body: (m: ConsumeMessage) => m.content.toString() };
}

async function drain(ch: Channel, name: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const message = await ch.get(name, { noAck: true });
    if (!message) return bodies;
    bodies.push(message.content.toString());
  }
}

test('messages finished together are acked in one frame', async () => {
  await publish(10);
  const c = await consume(10);
  for (const message of c.messages) c.acks.ack(message);
  await waitFor(() => c.ackCalls.length > 0, { what: 'the acks' });
  await new Promise((resolve) => setImmediate(resolve));
  expect(c.ackCalls).toEqual([{ body: '10', multiple: true }]);
  await c.ch.close();
  const ch = await connection.createChannel();
  expect(await drain(ch, queue)).toEqual([]);
  await ch.close();
});

test('a message still being handled is never acked by a later one: it comes back after a crash', async () => {
  await publish(10);
  const c = await consume(10);
  // The oldest hangs (a slow endpoint); 3 is parked; the rest finish out of order.
  const [first, ...rest] = c.messages;
  for (const message of rest.reverse()) {
    if (c.body(message) === '3') c.acks.reject(message, { requeue: false });
    else c.acks.ack(message);
  }
  await new Promise((resolve) => setImmediate(resolve));
  // None held back behind the hanging one, and none acked with `multiple` past it.
  expect(c.ackCalls).toHaveLength(8);
  expect(c.ackCalls.every((call) => !call.multiple)).toBe(true);

  // The dispatcher's channel goes: only the message it was still handling comes back. (Closing the
  // channel first lets the broker take the acks already sent; a connection dropped at once may lose
  // them too, and those messages come back, which is still at least once.)
  await c.ch.close();
  const ch = await connection.createChannel();
  await waitFor(async () => (await ch.checkQueue(queue)).messageCount === 1, { what: 'the redelivery' });
  expect(await drain(ch, queue)).toEqual([c.body(first!)]);
  expect(await drain(ch, parked)).toEqual(['3']);
  await ch.close();
});

test('once the oldest finishes, the finished ones behind it go with it in one frame', async () => {
  await publish(6);
  const c = await consume(6);
  const [first, second, ...rest] = c.messages;
  c.acks.ack(second!);
  await new Promise((resolve) => setImmediate(resolve));
  expect(c.ackCalls).toEqual([{ body: '2', multiple: false }]);
  // 3–6 and 1 finish in one turn: 1 was the oldest being handled, so one ack up to 6 covers them.
  for (const message of rest) c.acks.ack(message);
  c.acks.ack(first!);
  await new Promise((resolve) => setImmediate(resolve));
  expect(c.ackCalls.slice(1)).toEqual([{ body: '6', multiple: true }]);
  await c.ch.close();
  const ch = await connection.createChannel();
  expect(await drain(ch, queue)).toEqual([]);
  await ch.close();
});
