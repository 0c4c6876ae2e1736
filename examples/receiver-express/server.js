// An agency's webhook receiver on Express (docs/sdk.md, "Examples"). Each event reaches `handle`
// once: webhook deliveries are verified and deduplicated by the SDK's event stream, and the cursor
// read behind them brings what a delivery missed while this receiver was down.
import express from 'express';
// In your own project: `npm install @trips/sdk` and import from '@trips/sdk'. This repository's
// example runs the SDK from its sources, so it needs no build first.
import { createEventStream, fileCursorStore, TripService } from '../../packages/sdk/src/index.ts';

const { TRIPS_API_KEY, WEBHOOK_SECRET } = process.env;
if (!TRIPS_API_KEY || !WEBHOOK_SECRET) {
  console.error(
    'Set TRIPS_API_KEY (a key with events:read and trips:read, tps_…) and WEBHOOK_SECRET (the webhook’s whsec_…, or the one `trips listen` prints).',
  );
  process.exit(2);
}
const port = Number(process.env.PORT ?? 4100);
const baseUrl = process.env.TRIPS_BASE_URL ?? 'http://localhost:3000';
const client = new TripService({ apiKey: TRIPS_API_KEY, baseUrl });

// The cursor lives in a file, so a restart catches up from where this receiver stopped. The
// first run starts from now rather than from the oldest event the API keeps.
const cursorStore = fileCursorStore(process.env.CURSOR_FILE ?? '.state/receiver.cursor');
try {
  if (!(await cursorStore.load())) await cursorStore.save(await client.events.currentCursor());
} catch (error) {
  console.error(`Cannot read events from ${baseUrl}: ${error.message}`);
  process.exit(1);
}

/** Your work: here the object the event is about is read as it is now, and printed. */
async function handle(event, { source }) {
  const object = await client.events.fetchRelatedObject(event);
  const now = object
    ? (object.title ?? object.description ?? `${object.first_name} ${object.last_name}`)
    : 'gone';
  console.log(`${event.created_at}  ${event.type.padEnd(19)}  ${event.id}  by ${source.padEnd(7)}  ${now}`);
}

const stream = createEventStream({
  client,
  secrets: WEBHOOK_SECRET.split(','), // during a rotation, both: WEBHOOK_SECRET=whsec_old,whsec_new
  cursorStore,
  handler: handle,
  onError: (error, { event }) =>
    console.error(`failed on ${event?.id ?? 'reading events'}: ${error.message}`),
});

const app = express();
// The handler reads the raw body itself: no express.json() before it.
app.post('/webhooks', stream.webhookHandler);
// A failed handler answers 500, so the service sends the delivery again; no stack trace goes out.
app.use((error, _req, res, _next) => {
  console.error(`webhook failed: ${error.message}`);
  res.status(500).json({ error: { message: 'the receiver failed to process the event' } });
});
const server = app.listen(port, () =>
  console.log(`Receiving webhooks on http://localhost:${port}/webhooks, and reading the cursor behind them.`),
);

async function stop() {
  await stream.stop();
  server.close();
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
// Resolves once stopped; rejects on a refused key (401/403), which no retry mends.
stream.start().catch(async (error) => {
  console.error(`Stopped reading events: ${error.message}`);
  process.exitCode = 1;
  await stop();
});
