import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import amqplib, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, LogCapture, randomAmqpPrefix, waitFor } from '@trips/testkit';
import { Consumer, type ConsumerOptions, type Handler } from '../src/client/index.ts';
import { declareWithParked, depth } from './support.ts';

// Which frame the Consumer settles a message with. Since RabbitMQ 4.3 a basic.reject with requeue
// counts towards a quorum queue's delivery limit and a basic.nack with requeue does not; this
// machine's 3.10 counts both, so the broker cannot tell the two apart here. The test reads the
// frames instead: it wraps the real amqplib channel's sendImmediately, which both channel.reject and
// channel.nack (and ack) go through, on the channel the real Consumer consumes a real quorum queue on.
const prefix = randomAmqpPrefix();
const queue = `${prefix}frames`;
const parked = `${prefix}frames.parked`;
let admin: ChannelModel;

/** AMQP 0-9-1 method ids (class basic = 60) of the frames that settle a delivery. */
const SETTLING = new Map<number, string>([
  [(60 << 16) | 80, 'basic.ack'],
  [(60 << 16) | 90, 'basic.reject'],
  [(60 << 16) | 120, 'basic.nack'],
]);

interface Running {
  consumer: Consumer;
  connection: AmqpConnectionManager;
  /** Each settling frame sent, as `basic.reject requeue=true`, in order. */
  frames: string[];
  /** When the handler was first called. */
  firstAttempt: () => number | undefined;
}
const running: Running[] = [];

beforeAll(async () => {
  admin = await amqplib.connect(amqpUrl);
});
afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.consumer.stop();
    await r.connection.close();
  }
});
afterAll(async () => {
  await admin.close();
  await deleteAmqpObjects({ queues: [queue, parked] });
});

function recordFrames(ch: ConfirmChannel, frames: string[]): void {
  const raw = ch as unknown as { sendImmediately(method: number, fields: Record<string, unknown>): void };
  const send = raw.sendImmediately.bind(raw);
  raw.sendImmediately = (method, fields) => {
    const name = SETTLING.get(method);
    if (name) frames.push(name === 'basic.ack' ? name : `${name} requeue=${String(fields.requeue)}`);
    send(method, fields);
  };
}

/** A Consumer on a fresh quorum queue (delivery limit 3, parked behind it), consuming. */
async function start(handle: Handler, options: Partial<ConsumerOptions> = {}): Promise<Running> {
  const frames: string[] = [];
  let first: number | undefined;
  const connection = amqp.connect([amqpUrl]);
  const consumer = new Consumer(
    connection,
    {
      name: 'test',
      queue,
      prefetch: 5,
      maxPauseMs: 20,
      setup: async (ch) => {
        await declareWithParked(ch, { queue, parked, deliveryLimit: 3 });
        recordFrames(ch, frames);
      },
      handle: (message, publisher) => {
        first ??= Date.now();
        return handle(message, publisher);
      },
      ...options,
    },
    new LogCapture().logger,
  );
  const r: Running = { consumer, connection, frames, firstAttempt: () => first };
  running.push(r);
  await consumer.ready();
  return r;
}

async function publishOne(): Promise<void> {
  const ch = await admin.createConfirmChannel();
  ch.sendToQueue(queue, Buffer.from('{}'), { persistent: true });
  await ch.waitForConfirms();
  await ch.close();
}

test('a handler that throws while its dependencies are up returns the message with basic.reject, which counts', async () => {
  const redelivered: boolean[] = [];
  const r = await start(
    async (message) => {
      redelivered.push(message.fields.redelivered);
      if (redelivered.length === 1) throw new Error('the message is at fault');
      return 'ack';
    },
    { dependenciesUp: async () => true },
  );
  await publishOne();
  await waitFor(() => r.frames.includes('basic.ack'), { what: 'the message handled again and acked' });
  expect(r.frames).toEqual(['basic.reject requeue=true', 'basic.ack']);
  expect(redelivered).toEqual([false, true]);
});

test('a parked message is dead-lettered with basic.reject without requeue', async () => {
  const r = await start(async () => 'park');
  await publishOne();
  await waitFor(async () => (await depth(admin, parked)) === 1, { what: 'the message parked' });
  expect(r.frames).toEqual(['basic.reject requeue=false']);
});

test('a message held through an outage is given back with basic.nack once held holdLimitMs, and comes back', async () => {
  // Postgres is away until the message has been given back once.
  const r = await start(
    async () => {
      if (r.frames.length === 0) throw new Error('Postgres is away');
      return 'ack';
    },
    { dependenciesUp: async () => r.frames.length > 0, holdLimitMs: 1_000 },
  );
  await publishOne();
  await waitFor(() => r.frames.length > 0, { timeoutMs: 5_000, what: 'the held message given back' });
  const heldMs = Date.now() - r.firstAttempt()!;
  expect(heldMs).toBeGreaterThanOrEqual(990);
  expect(heldMs).toBeLessThan(2_000);
  await waitFor(() => r.frames.includes('basic.ack'), { what: 'the message handled again and acked' });
  expect(r.frames).toEqual(['basic.nack requeue=true', 'basic.ack']);
  expect(await depth(admin, parked)).toBe(0);
});

test('a consumer that stops while it holds a message gives it back with basic.nack', async () => {
  const r = await start(
    async () => {
      throw new Error('Postgres is away');
    },
    { dependenciesUp: async () => false },
  );
  await publishOne();
  await waitFor(() => r.firstAttempt() !== undefined, { what: 'the message held' });
  running.splice(running.indexOf(r), 1);
  await r.consumer.stop();
  await r.connection.close();
  expect(r.frames).toEqual(['basic.nack requeue=true']);
  await waitFor(async () => (await depth(admin, queue)) === 1, { what: 'the message back in its queue' });
  expect(await depth(admin, parked)).toBe(0);
});
