// The bare pipeline's consumer for `pnpm bench:pipeline`: the least a webhook sender can do and
// keep the spec's promises of delivery. It consumes the bare relay's quorum queue (prefetch 100,
// ours' DISPATCHER_PREFETCH), signs each message's body as it came (HMAC-SHA256, D7's
// `t=<unix>,v1=<hex>` of `<t>.<body>`), POSTs it with https.request over a keep-alive agent set up as the
// dispatcher's and dispatcher-bare.ts's are, records the attempt in one INSERT into
// webhook_attempts (the log owners read), and only then acks; a failed attempt is recorded and
// the message requeued (at least once; the quorum queue's x-delivery-count numbers the attempt).
// Its one webhook comes from the environment: no lookup of subscribers, no SSRF guard, no
// breaker, no retry schedule, no switch-off, no fairness.
import amqplib from 'amqplib';
import { createPool } from '@trips/db';
import { bareSender } from './bare-post.ts';

const PREFETCH = 100;
const url = process.env.BENCH_WEBHOOK_URL!;
const webhookId = process.env.BENCH_WEBHOOK_ID!;
const queue = process.env.AMQP_QUEUE!;
const RECORD = {
  name: 'bare_record_attempt',
  text:
    'INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, attempted_at, ' +
    'duration_ms, status_code, error, response_body, succeeded) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
};

const post = bareSender({ caFile: process.env.WEBHOOK_CA_FILE!, secret: process.env.BENCH_SECRET! });
const pool = createPool(process.env.DATABASE_URL!, { max: 4, applicationName: 'bench-bare-consumer' });
const connection = await amqplib.connect(process.env.AMQP_URL!);
const channel = await connection.createChannel();
await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
await channel.prefetch(PREFETCH);

async function deliver(message: amqplib.ConsumeMessage): Promise<void> {
  const eventId = String(message.properties.messageId);
  const eventType = String(message.properties.type);
  const body = message.content.toString('utf8');
  const attemptedAt = new Date();
  const started = performance.now();
  let status: number | null = null;
  let error: string | null = null;
  let responseBody: string | null = null;
  try {
    const response = await post(url, body, { id: eventId, type: eventType });
    status = response.statusCode || null;
    responseBody = response.body;
    if (!status) error = 'no answer';
    else if (status < 200 || status >= 300) error = `HTTP ${status}`;
  } catch (failure) {
    error = (failure as Error).message;
  }
  const attempt = 1 + Number(message.properties.headers?.['x-delivery-count'] ?? 0);
  await pool.query({
    ...RECORD,
    values: [
      webhookId,
      eventId,
      eventType,
      attempt,
      attemptedAt,
      Math.round(performance.now() - started),
      status,
      error,
      responseBody,
      error === null,
    ],
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
