import amqp from 'amqp-connection-manager';
import amqplib, { type ChannelModel } from 'amqplib';
import { amqpUrl, deleteAmqpObjects, LogCapture, randomAmqpPrefix, waitFor } from '@trips/testkit';
import { Consumer, type ConsumerOptions } from '../src/client/index.ts';
import { declareWithParked, depth } from './support.ts';

// The Consumer against the real broker, on a quorum queue with a delivery limit and a parked queue
// behind it, as the dispatcher declares its own (a limit of 3 here instead of 20, and pauses of
// 20 ms instead of up to 30 s, so that an outage longer than the limit takes milliseconds).
const LIMIT = 3;
const prefix = randomAmqpPrefix();
const queue = `${prefix}consumer`;
const parked = `${prefix}consumer.parked`;
let admin: ChannelModel;

beforeAll(async () => {
  admin = await amqplib.connect(amqpUrl);
});
afterAll(async () => {
  await admin.close();
  await deleteAmqpObjects({ queues: [queue, parked] });
});

/**
 * One message through a Consumer whose handler fails `failures` times (Postgres away, say) and then
 * succeeds. Answers how many times it was handled, and whether the last handling got it fresh.
 */
async function outlast(failures: number, options: Pick<ConsumerOptions, 'dependenciesUp'>) {
  const connection = amqp.connect([amqpUrl]);
  let attempts = 0;
  let handledFresh: boolean | undefined;
  const consumer = new Consumer(
    connection,
    {
      name: 'test',
      queue,
      prefetch: 5,
      maxPauseMs: 20,
      setup: async (ch) => {
        await declareWithParked(ch, { queue, parked, deliveryLimit: LIMIT });
      },
      handle: async (message) => {
        attempts++;
        if (attempts <= failures) throw new Error('Postgres is away');
        handledFresh = !message.fields.redelivered;
        return 'ack';
      },
      ...options,
    },
    new LogCapture().logger,
  );
  try {
    await consumer.ready();
    const ch = await admin.createConfirmChannel();
    ch.sendToQueue(queue, Buffer.from('{}'), { persistent: true });
    await ch.waitForConfirms();
    await ch.close();
    await waitFor(async () => handledFresh !== undefined || (await depth(admin, parked)) > 0, {
      what: 'the message handled or parked',
    });
    return { attempts, handledFresh, parked: await depth(admin, parked) };
  } finally {
    await consumer.stop();
    await connection.close();
  }
}

test('a message outlasts an outage longer than its delivery limit, kept rather than returned to its queue', async () => {
  const failures = LIMIT * 3;
  const kept = await outlast(failures, { dependenciesUp: async () => false });
  expect(kept).toEqual({ attempts: failures + 1, handledFresh: true, parked: 0 });

  // Returned to its queue after each failure, as before, the same outage parks it unhandled.
  const returned = await outlast(failures, { dependenciesUp: async () => true });
  expect(returned.parked).toBe(1);
  expect(returned.handledFresh).toBeUndefined();
  expect(returned.attempts).toBeLessThanOrEqual(LIMIT + 1);
});

test('a message that fails on its own while its dependencies are up is parked by the delivery limit', async () => {
  const poison = await outlast(Infinity, {});
  expect(poison.parked).toBe(1);
  expect(poison.attempts).toBe(LIMIT + 1);
});
