// The bare relay, bench:recorder's floor and bench:pipeline's: the least an outbox relay can do
// and still lose nothing and keep every event for GET /events, as the recorder must (the spec's
// work). Every 20 ms (the recorder's RECORDER_POLL_INTERVAL) it takes up to 250 outbox rows (the
// recorder's RECORDER_BATCH_SIZE) and inserts their events into bare.events (pipeline-bare.ts: the
// columns of ours' events, its primary key and cursor index) in one round trip, `BEGIN; WITH
// claimed AS (DELETE … RETURNING) INSERT INTO bare.events … RETURNING`; publishes each as the
// recorder does, `{ agency_id, event }` with the trip.created event record, to one durable quorum
// queue (ours' queues are quorum queues) with publisher confirms; and commits only once the broker
// has confirmed them all: a crash in between leaves the rows to be published again (at least once),
// and no event is visible in bare.events before it is. No classification, no grouping, no ordering
// across replicas (one relay: bigserial numbers the events in commit order), no partitions, no
// fairness across agencies: none of what ours does beside that.
// BENCH_RELAY_EVENTS=none keeps no events (the DELETE alone): bench:recorder's floor before it
// kept them, printed for reference. AMQP_QUEUE is the queue, asserted here; DATABASE_URL the bare
// database (pipeline-bare.ts).
import amqplib from 'amqplib';
import { eventRecord, type EventMessage } from '@trips/contracts';
import { createPool } from '@trips/db';

const BATCH = 250;
const POLL_MS = 20;
const TAKE = `DELETE FROM bare.outbox WHERE id IN (SELECT id FROM bare.outbox ORDER BY id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)`;
/** Two statements, one simple-protocol round trip: pg answers one result per statement. */
const CLAIM =
  process.env.BENCH_RELAY_EVENTS === 'none'
    ? `BEGIN; ${TAKE} RETURNING 'evt_bare' || id AS id, agency_id, trip_id, created_at`
    : `BEGIN; WITH claimed AS (${TAKE} RETURNING id, agency_id, trip_id, created_at) ` +
      'INSERT INTO bare.events (id, agency_id, type, object_type, object_id, created_at) ' +
      "SELECT 'evt_bare' || id, agency_id, 'trip.created', 'trip', trip_id, created_at FROM claimed ORDER BY id " +
      'RETURNING id, agency_id, object_id AS trip_id, created_at';

interface ClaimedEvent {
  id: string;
  agency_id: string;
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
    const [, claimed] = (await client.query(CLAIM)) as unknown as [unknown, { rows: ClaimedEvent[] }];
    for (const row of claimed.rows) {
      const event = eventRecord({
        id: row.id,
        type: 'trip.created',
        object_type: 'trip',
        object_id: row.trip_id,
        data: {},
        created_at: row.created_at,
      });
      const message: EventMessage = { agency_id: row.agency_id, event };
      channel.publish('', queue, Buffer.from(JSON.stringify(message)), {
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
