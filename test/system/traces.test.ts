import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deliveryMessageProperties, queueNames, topology } from '@trips/broker';
import type { DeliveryMessage } from '@trips/contracts';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import { createWebhook } from '@trips/db/webhooks';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  onAmqpChannel,
  randomAmqpPrefix,
  startReceiver,
  waitFor,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';
import { freePort, Replica, startAll } from './cluster.ts';

// Item 4 of issue 28: the three services as real processes, tracing on, exporting OTLP/HTTP (JSON)
// to a receiver in this test. One event, from the host application's write to its delivery and a
// retry a second later, is one trace with its spans in the right parent-child order, which an
// owner's redelivery, carrying no trace context, joins too; an API request that came with a
// traceparent continues it; and nothing exported carries a key, a secret or the object's data.

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  start: bigint;
  end: bigint;
  attributes: Record<string, string | number | boolean>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
type OtlpAttribute = { key: string; value: OtlpValue };
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: {
      spans: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        startTimeUnixNano: string | number;
        endTimeUnixNano: string | number;
        attributes?: OtlpAttribute[];
      }[];
    }[];
  }[];
}

const valueOf = (v: OtlpValue) => v.stringValue ?? v.boolValue ?? v.doubleValue ?? Number(v.intValue);
const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP receiver: every export's raw body, and its spans. */
async function startOtlpReceiver() {
  const bodies: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      for (const rs of (JSON.parse(body) as OtlpExport).resourceSpans) {
        const service = String(attributesOf(rs.resource.attributes)['service.name']);
        for (const s of rs.scopeSpans.flatMap((ss) => ss.spans))
          spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? '',
            name: s.name,
            start: BigInt(s.startTimeUnixNano),
            end: BigInt(s.endTimeUnixNano),
            attributes: attributesOf(s.attributes),
          });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    spans,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

let ca: TestCa;
let t: TestDatabase;
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
let receiver: TestReceiver;
const prefix = randomAmqpPrefix();
const replicas: Replica[] = [];

beforeAll(async () => {
  [ca, t, otlp] = await Promise.all([createTestCa(), createTestDatabase(), startOtlpReceiver()]);
  receiver = await startReceiver(ca);
});

afterAll(async () => {
  for (const replica of replicas) await replica.stop().catch(() => undefined);
  for (const replica of replicas) await replica.cleanup();
  await receiver?.close();
  await otlp?.close();
  await deleteAmqpObjects({
    queues: queueNames(topology(prefix, [1_000])),
    exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`],
  });
  await t?.drop();
});

async function startServices(): Promise<string> {
  const common = {
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    EVENT_GROUP_QUIET: '1s',
    EVENT_GROUP_MAX: '3s',
  };
  const [dispatcherPort, recorderPort, apiPort, metricsPort] = (await Promise.all(
    Array.from({ length: 4 }, () => freePort()),
  )) as [number, number, number, number];
  replicas.push(
    new Replica(
      'dispatcher',
      'dispatcher',
      {
        ...common,
        DISPATCHER_HEALTH_PORT: String(dispatcherPort),
        WEBHOOK_CA_FILE: ca.caFile,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_RETRY_DELAYS: '1s',
        WEBHOOK_TIMEOUT: '2s',
        DISPATCHER_STOP_TIMEOUT: '5s',
      },
      dispatcherPort,
    ),
    new Replica(
      'recorder',
      'recorder',
      { ...common, RECORDER_HEALTH_PORT: String(recorderPort), RECORDER_STOP_TIMEOUT: '5s' },
      recorderPort,
    ),
    new Replica(
      'api',
      'api',
      {
        ...common,
        PORT: String(apiPort),
        API_METRICS_PORT: String(metricsPort),
        API_SHUTDOWN_DEADLINE: '5s',
      },
      apiPort,
    ),
  );
  await startAll(replicas);
  return `http://127.0.0.1:${apiPort}`;
}

/** The trace id every service derives from an event id (docs/design/tracing.md). */
const traceIdOf = (eventId: string) =>
  createHash('sha256').update(`trips.event:${eventId}`).digest('hex').slice(0, 32);

const TITLE = 'Confidential Muirfield trip 7f3c';
const BASE_CAMP = 'Greywalls Hotel 91ab';

test('one event is one trace from write to retried delivery; an API request continues its caller’s trace', async () => {
  const agency = await createAgency(t.db, {
    name: 'Traced Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const { key, id: keyId } = await createApiKey(t.db, { agencyId: agency.id, scopes: ['trips:read'] });
  const { webhook, secret } = await createWebhook(t.db, {
    agencyId: agency.id,
    url: receiver.url,
    eventTypes: ['trip.created'],
  });
  // The first attempt fails, so the event's trace holds a retry from the delay queue.
  receiver.answer = () => (receiver.requests.length === 1 ? { status: 500 } : { status: 200 });
  const api = await startServices();

  // The host application's write.
  const { id: tripId } = await t.db
    .insertInto('trips')
    .values({
      agency_id: agency.id,
      is_template: false,
      title: TITLE,
      region: 'Scotland',
      base_camp: BASE_CAMP,
      num_days: 4,
      golfers: 8,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await waitFor(() => receiver.requests.length >= 2, {
    timeoutMs: 20_000,
    what: 'the delivery and its retry',
  });
  const eventId = (JSON.parse(receiver.requests[0]!.body) as { id: string }).id;
  const traceId = traceIdOf(eventId);

  const ofEvent = () => otlp.spans.filter((s) => s.attributes['trips.event.id'] === eventId);
  const named = (name: string) => ofEvent().filter((s) => s.name === name);
  await waitFor(() => named('webhook.attempt').length >= 2 && named('event.record').length >= 1, {
    timeoutMs: 15_000,
    what: "the event's spans",
  });
  const [record] = named('event.record');
  const [publish] = named('event.publish');
  const [fanOut] = named('event.fan_out');
  const attempts = named('webhook.attempt').sort(
    (a, b) => Number(a.attributes['trips.delivery.attempt']) - Number(b.attributes['trips.delivery.attempt']),
  );
  expect(ofEvent().map((s) => s.traceId)).toEqual(ofEvent().map(() => traceId));

  // Parent and child, in the journey's order, across the three services' processes.
  expect(record).toMatchObject({ service: 'trips-recorder', parentSpanId: '' });
  expect(publish).toMatchObject({ service: 'trips-recorder', parentSpanId: record!.spanId });
  expect(fanOut).toMatchObject({ service: 'trips-dispatcher', parentSpanId: publish!.spanId });
  expect(attempts).toHaveLength(2);
  expect(attempts[0]).toMatchObject({ service: 'trips-dispatcher', parentSpanId: fanOut!.spanId });
  expect(attempts[1]).toMatchObject({ service: 'trips-dispatcher', parentSpanId: attempts[0]!.spanId });
  expect(record!.start).toBeLessThanOrEqual(publish!.start);
  expect(publish!.start).toBeLessThanOrEqual(fanOut!.start);
  expect(attempts[1]!.start - attempts[0]!.end).toBeGreaterThanOrEqual(900_000_000n); // the 1 s delay

  expect(record!.attributes).toMatchObject({
    'trips.event.type': 'trip.created',
    'trips.agency.id': agency.id,
    'trips.event.grouped': false,
  });
  // The span starts when the change was captured, in the writer's transaction.
  expect(new Date(String(record!.attributes['trips.change.captured_at'])).getTime() * 1e6).toBe(
    Number(record!.start),
  );
  expect(attempts[0]!.attributes).toMatchObject({
    'trips.webhook.id': webhook.id,
    'trips.delivery.attempt': 1,
    'trips.delivery.outcome': 'retry_scheduled',
    'http.response.status_code': 500,
    'trips.delivery.source': 'fan_out',
  });
  expect(attempts[1]!.attributes).toMatchObject({
    'trips.webhook.id': webhook.id,
    'trips.delivery.attempt': 2,
    'trips.delivery.outcome': 'delivered',
    'http.response.status_code': 200,
    'trips.delivery.source': 'deliveries_queue',
  });
  expect(attempts[1]!.attributes['trips.delivery.duration_ms']).toEqual(expect.any(Number));

  // The trace as the receiver got it, for the reader: each span from the capture, and how long.
  const ms = (ns: bigint) => (Number(ns) / 1e6).toFixed(1).padStart(8);
  console.log(
    [`the trace of ${eventId} (trace id ${traceId}), from the change's capture:`]
      .concat(
        [record!, publish!, fanOut!, ...attempts].map(
          (span) =>
            `  ${span.name.padEnd(16)} ${span.service.padEnd(17)} at ${ms(span.start - record!.start)} ms` +
            `  for ${ms(span.end - span.start)} ms`,
        ),
      )
      .join('\n'),
  );

  // An owner's redelivery, published as the settings module does: no trace context in its headers.
  // It joins the event's trace all the same, under the root span, as the trace id is the event's.
  const redelivery: DeliveryMessage = {
    webhook_id: webhook.id,
    agency_id: agency.id,
    epoch: webhook.epoch,
    event: JSON.parse(receiver.requests[0]!.body) as DeliveryMessage['event'],
    attempt: 1,
    first_failed_at: null,
  };
  await onAmqpChannel(async (ch) => {
    ch.sendToQueue(
      `${prefix}trips.dispatcher.deliveries`,
      Buffer.from(JSON.stringify(redelivery)),
      deliveryMessageProperties(redelivery),
    );
    await ch.waitForConfirms();
  });
  const redelivered = await waitFor(() => named('webhook.attempt').find((s) => !attempts.includes(s)), {
    timeoutMs: 15_000,
    what: "the redelivery's span",
  });
  expect(redelivered).toMatchObject({
    traceId,
    parentSpanId: record!.spanId,
    attributes: expect.objectContaining({
      'trips.delivery.attempt': 1,
      'trips.delivery.outcome': 'delivered',
    }),
  });

  // An API request with its caller's traceparent.
  const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';
  const answer = await fetch(`${api}/api/v1/trips/${tripId}`, {
    headers: { authorization: `Bearer ${key}`, traceparent: `00-${callerTrace}-${callerSpan}-01` },
  });
  expect(answer.status).toBe(200);
  const request = await waitFor(() => otlp.spans.find((s) => s.traceId === callerTrace), {
    timeoutMs: 10_000,
    what: 'the request span',
  });
  expect(request).toMatchObject({
    service: 'trips-api',
    name: 'GET /api/v1/trips/:id',
    parentSpanId: callerSpan,
    attributes: expect.objectContaining({
      'http.route': '/api/v1/trips/:id',
      'http.response.status_code': 200,
      'trips.agency.id': agency.id,
      'trips.api_key.id': keyId,
    }),
  });

  // No key, secret or object data in anything exported.
  const exported = otlp.bodies.join('\n');
  const hidden = { key, keyPastItsPrefix: key.slice(12), secret, title: TITLE, baseCamp: BASE_CAMP };
  expect(Object.entries(hidden).filter(([, value]) => exported.includes(value))).toEqual([]);
}, 90_000);

test('a grouped update’s trace starts at its group’s first change, not at its recording', async () => {
  // On the services the test above started.
  const agency = await createAgency(t.db, {
    name: 'Grouped Tours',
    apiEnabled: true,
    subscriptionStatus: 'active',
  });
  const { id: tripId } = await t.db
    .insertInto('trips')
    .values({ agency_id: agency.id, is_template: false, title: 'A', region: 'Fife', num_days: 2, golfers: 4 })
    .returning('id')
    .executeTakeFirstOrThrow();
  const rename = (title: string) =>
    t.db.updateTable('trips').set({ title }).where('id', '=', tripId).execute();
  const beforeFirst = Date.now();
  await rename('B');
  const afterFirst = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 500));
  await rename('C'); // the same group: one trip.updated, due a quiet second after this
  const record = await waitFor(
    () =>
      otlp.spans.find(
        (s) =>
          s.name === 'event.record' &&
          s.attributes['trips.event.type'] === 'trip.updated' &&
          s.attributes['trips.agency.id'] === agency.id,
      ),
    { timeoutMs: 15_000, what: "the trip.updated event's record span" },
  );
  const startMs = Number(record.start / 1_000_000n);
  expect(record.attributes['trips.event.grouped']).toBe(true);
  expect(startMs).toBeGreaterThanOrEqual(beforeFirst - 5); // the clocks' rounding
  expect(startMs).toBeLessThanOrEqual(afterFirst);
  expect(new Date(String(record.attributes['trips.change.captured_at'])).getTime()).toBe(startMs);
}, 30_000);
