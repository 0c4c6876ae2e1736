import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import {
  amqpUrl,
  deleteAmqpObjects,
  LogCapture,
  onAmqpChannel,
  randomAmqpPrefix,
  stallFirstChannel,
  waitFor,
} from '@trips/testkit';
import { PublishRefused, UnconfirmedPublish } from '../src/index.ts';
import { ConfirmPublisher } from '../src/client/index.ts';

// The ConfirmPublisher the recorder's events and the dispatcher's lanes publish through. A channel
// that stops confirming while its connection lives (a quorum queue's leader change it missed, on
// RabbitMQ 3.10) cannot be caused at will, so the test makes the same state from the client's side:
// the first channel's confirms are swallowed. What this proves: publishes on it fail after the
// timeout, the publisher leaves it once however many time out together, and the next publish is
// confirmed on a new channel. What it cannot: that RabbitMQ leaves a channel's publishes unconfirmed.
const TIMEOUT_MS = 300;
const prefix = randomAmqpPrefix();
const queue = `${prefix}confirms`;
const full = `${prefix}confirms.full`;
let connection: AmqpConnectionManager;
/** How many channels the publishers have opened; the first one's confirms never reach them. */
let channels: () => number;

beforeAll(async () => {
  await onAmqpChannel(async (ch) => {
    await ch.assertQueue(queue, { durable: true });
    // Takes nothing: every publish routed to it is refused.
    await ch.assertQueue(full, {
      durable: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
  });
  connection = amqp.connect([amqpUrl]);
  channels = stallFirstChannel(connection);
});
afterAll(async () => {
  await connection.close();
  await deleteAmqpObjects({ queues: [queue, full] });
});

const bodies = () =>
  onAmqpChannel(async (ch) => {
    const seen: string[] = [];
    for (let m = await ch.get(queue); m; m = await ch.get(queue)) {
      seen.push(m.content.toString());
      ch.ack(m);
    }
    return seen;
  });

test('publishes left unconfirmed fail in time; the publisher moves to a new channel once, where the next is confirmed', async () => {
  const logs = new LogCapture('broker');
  const publisher = new ConfirmPublisher(connection, { name: 'test', timeoutMs: TIMEOUT_MS }, logs.logger);
  const send = (body: string) => publisher.publish('', queue, Buffer.from(body), {});
  try {
    const started = Date.now();
    const stalled = await Promise.allSettled(['a', 'b', 'c'].map(send));
    expect(stalled.map((r) => r.status === 'rejected' && r.reason)).toEqual([
      expect.any(UnconfirmedPublish),
      expect.anything(),
      expect.anything(),
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 10);
    await waitFor(() => channels() === 2, { what: 'a new channel' });
    await send('d');
  } finally {
    await publisher.close();
  }
  expect(channels()).toBe(2);
  // Sent on the first channel all the same (its confirms were swallowed, not its publishes).
  expect(await bodies()).toEqual(['a', 'b', 'c', 'd']);
  expect(logs.lines.filter((l) => l.includes('a publish went unconfirmed past its timeout'))).toHaveLength(1);
});

test('a publish RabbitMQ refuses fails as PublishRefused, and the channel stays', async () => {
  const before = channels();
  const publisher = new ConfirmPublisher(connection, { name: 'test' }, new LogCapture('broker').logger);
  try {
    await expect(publisher.publish('', full, Buffer.from('x'), {})).rejects.toThrow(PublishRefused);
    await publisher.publish('', queue, Buffer.from('y'), {});
  } finally {
    await publisher.close();
  }
  expect(channels()).toBe(before + 1);
  expect(await bodies()).toEqual(['y']);
});
