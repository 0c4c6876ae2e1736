// "How late are webhooks" from the writer's commit: a change's capture time, taken in the writer's
// transaction, goes from the outbox through the recorder (events_unpublished, then the message's
// headers) to the dispatcher and through its delay queues to a retry, and each service times its
// part from it: trips_change_capture_to_publish_seconds and trips_change_capture_to_delivery_seconds.
// The api, the recorder and the dispatcher as processes, as their images run them.
import { createWebhook } from '@trips/db/webhooks';
import { sample, scrapeMetrics, startReceiver, waitFor, type TestReceiver } from '@trips/testkit';
import { insertTrip, startStack, type Stack } from '../sdk/stack.ts';

const CAPTURE_DELIVERY = 'trips_change_capture_to_delivery_seconds';
const RECORD_DELIVERY = 'trips_event_record_to_delivery_seconds';
const CAPTURE_PUBLISH = 'trips_change_capture_to_publish_seconds';
const RECORD_PUBLISH = 'trips_event_record_to_publish_seconds';
/** How long the writer keeps its transaction open after its write. */
const HOLD_S = 1.5;

let stack: Stack;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  stack = await startStack({ dispatcher: true });
}, 90_000);
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await stack?.stop();
});

const metricsOf = (service: 'recorder' | 'dispatcher') =>
  scrapeMetrics(stack.replicas.find((r) => r.service === service)!.readyUrl.replace('/readyz', '/metrics'));
const scrapeBoth = async () => ({
  recorder: await metricsOf('recorder'),
  dispatcher: await metricsOf('dispatcher'),
});

/** An agency whose webhook takes trip.created, answering as `answer` says. */
async function agencyWithReceiver(answer?: TestReceiver['answer']) {
  const { agencyId } = await stack.agency();
  const receiver = await startReceiver(stack.ca!);
  receivers.push(receiver);
  if (answer) receiver.answer = answer;
  await createWebhook(stack.db, { agencyId, url: receiver.url, eventTypes: ['trip.created'] });
  return agencyId;
}

/** A trip written by a host request that keeps its transaction open HOLD_S after the write. */
async function slowWrite(agencyId: string): Promise<void> {
  await stack.db.transaction().execute(async (trx) => {
    await insertTrip(trx, agencyId);
    await trx.selectNoFrom((eb) => eb.fn('pg_sleep', [eb.val(HOLD_S)]).as('slept')).execute();
  });
}

/** What a series gained between two scrapes. */
const gained = (before: string, after: string, name: string, labels: Record<string, string>) =>
  (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

test('a first delivery and its publish, timed from the change’s capture in the writer’s transaction', async () => {
  const agencyId = await agencyWithReceiver();
  const before = await scrapeBoth();
  await slowWrite(agencyId);
  const first = { attempt: 'first', grouped: 'false' };
  const after = await waitFor(
    async () => {
      const both = await scrapeBoth();
      return gained(before.dispatcher, both.dispatcher, `${CAPTURE_DELIVERY}_count`, first) >= 1 && both;
    },
    { what: 'the first delivery timed from its capture', timeoutMs: 20_000 },
  );
  const delivery = (name: string, labels: Record<string, string>) =>
    gained(before.dispatcher, after.dispatcher, name, labels);
  expect(delivery(`${CAPTURE_DELIVERY}_count`, first)).toBe(1);
  expect(delivery(`${CAPTURE_DELIVERY}_count`, { attempt: 'retry' })).toBe(0);
  // Both end at the same 2xx; the capture came HOLD_S before the commit, the recording after it.
  const fromCapture = delivery(`${CAPTURE_DELIVERY}_sum`, first);
  const fromRecord = delivery(`${RECORD_DELIVERY}_sum`, { attempt: 'first' });
  expect(fromCapture).toBeGreaterThanOrEqual(fromRecord);
  expect(fromCapture - fromRecord).toBeGreaterThanOrEqual(HOLD_S - 0.01);

  // The recorder's part: observed when RabbitMQ confirmed, before the dispatcher had the message.
  const publish = (name: string, labels: Record<string, string> = {}) =>
    gained(before.recorder, after.recorder, name, labels);
  expect(publish(`${CAPTURE_PUBLISH}_count`, { grouped: 'false' })).toBe(1);
  expect(publish(`${CAPTURE_PUBLISH}_sum`) - publish(`${RECORD_PUBLISH}_sum`)).toBeGreaterThanOrEqual(
    HOLD_S - 0.01,
  );
}, 30_000);

test('a retried delivery is timed from the capture too: the capture time goes through the delay queue', async () => {
  let answered = 0;
  const agencyId = await agencyWithReceiver(() => ({ status: answered++ === 0 ? 500 : 200 }));
  const before = await metricsOf('dispatcher');
  await slowWrite(agencyId);
  const retry = { attempt: 'retry', grouped: 'false' };
  const after = await waitFor(
    async () => {
      const text = await metricsOf('dispatcher');
      return gained(before, text, `${RECORD_DELIVERY}_count`, { attempt: 'retry' }) >= 1 && text;
    },
    { what: 'the retry delivered (WEBHOOK_RETRY_DELAYS 1s)', timeoutMs: 20_000 },
  );
  expect(answered).toBe(2);
  expect(gained(before, after, `${CAPTURE_DELIVERY}_count`, retry)).toBe(1);
  expect(gained(before, after, `${CAPTURE_DELIVERY}_count`, { attempt: 'first' })).toBe(0);
  const fromCapture = gained(before, after, `${CAPTURE_DELIVERY}_sum`, retry);
  const fromRecord = gained(before, after, `${RECORD_DELIVERY}_sum`, { attempt: 'retry' });
  expect(fromCapture - fromRecord).toBeGreaterThanOrEqual(HOLD_S - 0.01);
  // The writer's wait and the retry's delay of a second, at least.
  expect(fromCapture).toBeGreaterThanOrEqual(HOLD_S + 1);
}, 30_000);
