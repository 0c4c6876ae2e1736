// The services' RabbitMQ connection writes what its channels send in one tick as one write
// (src/client/coalesce-writes.ts): this holds amqplib to writing through the socket's `write`, and shows
// nothing is lost or reordered on the way.
import type { Socket } from 'node:net';
import type { ConfirmChannel } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, LogCapture, onAmqpChannel, randomAmqpPrefix } from '@trips/testkit';
import { connectBroker } from '../src/client/connect.ts';

const queue = `${randomAmqpPrefix()}coalesce`;
afterAll(() => deleteAmqpObjects({ queues: [queue], exchanges: [] }));

test('fifty publishes of one tick leave in one or two writes to the socket, all arriving in order', async () => {
  const connection = connectBroker([amqpUrl], new LogCapture('broker').logger);
  const wrapper = connection.createChannel({
    json: false,
    setup: (ch: ConfirmChannel) => ch.assertQueue(queue, { durable: false }),
  });
  try {
    await wrapper.waitForConnect();
    const socket = (connection.connection as unknown as { connection: { stream: Socket } }).connection.stream;
    // What the socket hands the kernel: one call of _write or _writev is one system call.
    let calls = 0;
    for (const method of ['_write', '_writev'] as const) {
      const original = socket[method]!.bind(socket) as (...args: unknown[]) => void;
      (socket as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        calls++;
        original(...args);
      };
    }
    const sent = Array.from({ length: 50 }, (_, i) => `m${i}`);
    await Promise.all(sent.map((body) => wrapper.sendToQueue(queue, Buffer.from(body))));
    // The publishes' writes, plus at most one for anything else written in that tick.
    expect(calls).toBeLessThanOrEqual(2);
    const received = await onAmqpChannel(async (ch) => {
      const bodies: string[] = [];
      for (let m = await ch.get(queue, { noAck: true }); m; m = await ch.get(queue, { noAck: true }))
        bodies.push(m.content.toString());
      return bodies;
    });
    expect(received).toEqual(sent);
  } finally {
    await wrapper.close();
    await connection.close();
  }
});
