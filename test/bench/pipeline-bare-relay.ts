// The bare pipeline's relay for `pnpm bench:pipeline`: the least an outbox relay can do and still
// lose nothing. Every 20 ms (the recorder's RECORDER_POLL_INTERVAL) it takes up to 250 outbox rows
// (the recorder's RECORDER_BATCH_SIZE) in one round trip, `BEGIN; DELETE … RETURNING`, publishes
// each as a trip.created event record to one durable quorum queue (ours' queues are quorum queues)
// with publisher confirms, and commits the DELETE only once the broker has confirmed them all: a
// crash in between leaves the rows to be published again (at least once). No events table, no
// classification, no grouping, no cursor, no fairness across agencies: none of what ours records.
// AMQP_QUEUE is the queue, asserted here; DATABASE_URL the bare database (pipeline-bare.ts).
import amqplib from 'amqplib';
import { eventRecord } from '@trips/contracts';
import { createPool } from '@trips/db';

const BATCH = 250;
const POLL_MS = 20;
const CLAIM =
  'BEGIN; DELETE FROM bare.outbox WHERE id IN ' +
  `(SELECT id FROM bare.outbox ORDER BY id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED) ` +
  'RETURNING id, trip_id, created_at';

interface OutboxRow {
  id: number;
  trip_id: string;
  created_at: Date;
}

const queue = process.env.AMQP_QUEUE!;
const pool = createPool(process.env.DATABASE_URL!, { max: 1, applicationName: 'bench-bare-relay' });
const connection = await amqplib.connect(process.env.AMQP_URL!);
const channel = await connection.createConfirmChannel();
await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
const client = await pool.connect();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let running = true;

async function relay(): Promise<void> {
  while (running) {
    // Two statements, one simple-protocol round trip: pg answers one result per statement.
    const [, claimed] = (await client.query(CLAIM)) as unknown as [unknown, { rows: OutboxRow[] }];
    for (const row of claimed.rows) {
      const event = eventRecord({
        id: `evt_bare${row.id}`,
        type: 'trip.created',
        object_type: 'trip',
        object_id: row.trip_id,
        data: {},
        created_at: row.created_at,
      });
      channel.publish('', queue, Buffer.from(JSON.stringify(event)), {
        persistent: true,
        contentType: 'application/json',
        messageId: event.id,
        type: event.type,
      });
    }
    if (claimed.rows.length > 0) await channel.waitForConfirms();
    await client.query('COMMIT');
    if (claimed.rows.length < BATCH) await sleep(POLL_MS);
  }
}

const relaying = relay();
// Exits (rather than dies) on SIGTERM, after the batch in hand is published and committed.
const stop = async () => {
  running = false;
  await relaying.catch(() => {});
  client.release();
  await pool.end();
  await connection.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());
relaying.catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
process.send!({ ready: true });
