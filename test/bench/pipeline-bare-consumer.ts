// The bare consumer: the least a webhook sender can do and keep the spec's promises of delivery,
// the floor of bench:pipeline (fed by the bare relay) and of bench:dispatcher's throughput part (fed
// by its feeder, as the dispatcher is). It consumes one quorum queue (prefetch BENCH_PREFETCH, ours'
// DISPATCHER_PREFETCH), takes the event record out of each message as the recorder publishes it
// (`{ agency_id, event }`), signs it as D7 and D11 say and POSTs it with the dispatcher's own client
// (bare-post.ts: undici's Agent as sender.ts makes it), at most BENCH_CONCURRENCY at a time (ours'
// DISPATCHER_ENDPOINT_CONCURRENCY; unset: as many as the prefetch). Each attempt is recorded in
// webhook_attempts with what an owner's attempt page shows (the signature sent, the answer's status,
// headers and first KiB), batched as the dispatcher batches its attempts (its Batcher and
// ATTEMPT_BATCHING: one statement and one commit for the attempts that finish together), and the
// message is acked only once its attempt is committed. A failed attempt is recorded and its message
// requeued (at least once; the quorum queue's x-delivery-count numbers the attempt).
// Its one webhook comes from the environment: no lookup of subscribers, no SSRF check of the URL,
// no breaker, no retry schedule, no failure streak or switch-off, no fairness, and one ack frame
// per message. AMQP_QUEUE is asserted here (a quorum queue) unless AMQP_QUEUE_DECLARED is set: then
// whoever feeds it declared it (bench:dispatcher: as ours' events queue, bounded).
import amqplib from 'amqplib';
import type { EventMessage } from '@trips/contracts';
import { createPool } from '@trips/db';
import type { NewAttempt } from '@trips/db/webhook-attempts';
import { ATTEMPT_BATCHING, Batcher } from '@trips/dispatcher';
import { bareSender } from './bare-post.ts';

const PREFETCH = Number(process.env.BENCH_PREFETCH ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? PREFETCH);
const url = process.env.BENCH_WEBHOOK_URL!;
const webhookId = process.env.BENCH_WEBHOOK_ID!;
const queue = process.env.AMQP_QUEUE!;

/** What an attempt page shows, as the attempts repository takes it (less the one webhook). */
type Attempt = Required<Omit<NewAttempt, 'webhookId' | 'requestBody' | 'errorDetail' | 'nextAttemptAt'>>;

/** Several attempts in one statement: a column of each field, unnested. */
const RECORD = {
  name: 'bare_record_attempts',
  text:
    'INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, attempted_at, duration_ms, ' +
    'status_code, error, response_body, succeeded, request_signature, response_headers) ' +
    'SELECT $1, e, t, a, at, d, s, err, rb, err IS NULL, sig, rh FROM unnest($2::text[], $3::text[], ' +
    '$4::int[], $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[]) ' +
    'AS u(e, t, a, at, d, s, err, rb, sig, rh)',
};

const post = bareSender({ caFile: process.env.WEBHOOK_CA_FILE!, secret: process.env.BENCH_SECRET! });
const pool = createPool(process.env.DATABASE_URL!, { max: 2, applicationName: 'bench-bare-consumer' });

const record = async (list: Attempt[]) => {
  const column = <T>(value: (a: Attempt) => T) => list.map(value);
  await pool.query({
    ...RECORD,
    values: [
      webhookId,
      column((a) => a.eventId),
      column((a) => a.eventType),
      column((a) => a.attempt),
      column((a) => a.attemptedAt),
      column((a) => a.durationMs),
      column((a) => a.statusCode),
      column((a) => a.error),
      column((a) => a.responseBody),
      column((a) => a.requestSignature),
      column((a) => a.responseHeaders),
    ],
  });
  return list.map(() => undefined);
};
const attempts = new Batcher<Attempt, void>({
  runBatch: record,
  runOne: async (attempt) => void (await record([attempt])),
  ...ATTEMPT_BATCHING,
});

const connection = await amqplib.connect(process.env.AMQP_URL!);
const channel = await connection.createChannel();
if (!process.env.AMQP_QUEUE_DECLARED)
  await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
await channel.prefetch(PREFETCH);

/** POSTs in flight, and the deliveries waiting for one to end. */
let sending = 0;
const waiting: (() => void)[] = [];
async function takeSlot(): Promise<void> {
  if (sending < CONCURRENCY) sending++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
}
function giveSlot(): void {
  const next = waiting.shift();
  if (next) next();
  else sending--;
}

async function deliver(message: amqplib.ConsumeMessage): Promise<void> {
  const { event } = JSON.parse(message.content.toString('utf8')) as EventMessage;
  const body = JSON.stringify(event);
  await takeSlot();
  const attemptedAt = new Date();
  const started = performance.now();
  let answer;
  try {
    answer = await post(url, body, event);
  } finally {
    giveSlot();
  }
  const status = answer.statusCode || null;
  const error = !status ? 'network' : status >= 200 && status < 300 ? null : 'http_status';
  await attempts.call({
    eventId: event.id,
    eventType: event.type,
    attempt: 1 + Number(message.properties.headers?.['x-delivery-count'] ?? 0),
    attemptedAt,
    durationMs: Math.round(performance.now() - started),
    statusCode: status,
    error,
    responseBody: status ? answer.body : null,
    responseHeaders: status ? answer.headers : null,
    requestSignature: answer.signature,
  });
  if (error === null) channel.ack(message);
  else channel.nack(message, false, true);
}

await channel.consume(queue, (message) => {
  if (!message) return;
  deliver(message).catch((failure: unknown) => {
    // The attempt could not be recorded: leave the message to be delivered again.
    console.error(failure);
    channel.nack(message, false, true);
  });
});

const stop = async () => {
  await channel.close().catch(() => {});
  await connection.close().catch(() => {});
  await pool.end();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());
process.send!({ ready: true });
