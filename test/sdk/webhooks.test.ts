import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { createRequire } from 'node:module';
import { createWebhook } from '@trips/db/webhooks';
import { rotateWebhookSecretIn } from '@trips/db/webhook-secrets';
import { waitFor } from '@trips/testkit';
import {
  createWebhookHandler,
  signWebhookForTest,
  TripService,
  type Event,
} from '../../packages/sdk/src/index.ts';
import { insertTrip, setTripStatus, startStack, type Stack } from './stack.ts';

// Webhook verification of real deliveries (issue 25, items 4 and 9): the real dispatcher signs,
// the SDK's handler on an HTTPS receiver verifies, also while the secret is rotated; and the
// handler's answers for node:http and Express, each bad request refused for its reason.

// Express, resolved from the API's own package (test/ does not depend on it).
const require = createRequire(new URL('../../services/api/package.json', import.meta.url));
interface App {
  (req: IncomingMessage, res: ServerResponse): void;
  post(path: string, ...handlers: unknown[]): void;
  use(handler: unknown): void;
}
const express = require('express') as (() => App) & { json(): unknown; raw(o: object): unknown };

let stack: Stack;
let client: TripService;
let agencyId: string;
const servers: Server[] = [];

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  stack = await startStack({ dispatcher: true });
  const agency = await stack.agency();
  agencyId = agency.agencyId;
  client = new TripService({ apiKey: agency.key, baseUrl: stack.apiUrl });
}, 60_000);
afterAll(async () => {
  for (const server of servers) {
    server.close();
    (server as unknown as { closeAllConnections(): void }).closeAllConnections();
  }
  await stack?.stop();
}, 30_000);

test('real deliveries verify with the handler, before, during and after a secret rotation', async () => {
  const received: { event: Event; secrets: string[] }[] = [];
  let secrets: string[] = [];
  const refused: string[] = [];
  const server = createHttpsServer({ key: stack.ca!.key, cert: stack.ca!.cert }, (req, res) => {
    const mine = [...secrets];
    const handler = createWebhookHandler({
      secrets: mine,
      onEvent: (event) => void received.push({ event, secrets: mine }),
    });
    res.on('finish', () => res.statusCode !== 200 && refused.push(String(res.statusCode)));
    void handler(req, res);
  });
  const address = await listen(server);
  const { webhook, secret: first } = await createWebhook(stack.db, {
    agencyId,
    url: `https://localhost:${address.split(':')[1]}/hooks`,
    eventTypes: ['trip.created', 'trip.status_changed'],
  });
  secrets = [first];
  const tripId = await insertTrip(stack.db, agencyId, 'Delivered');
  await waitFor(() => received.length >= 1, { timeoutMs: 20_000, what: 'the first delivery' });
  expect(received[0]!.event).toMatchObject({ type: 'trip.created', related_object: { id: tripId } });
  // The body is the event exactly as GET /events gives it.
  const [listed] = await client.events.list({ types: ['trip.created'] }).toArray();
  expect(received[0]!.event).toEqual(listed);

  // Rotation: both secrets sign for a while; a receiver holding either one accepts.
  const { secret: second } = await stack.db
    .transaction()
    .execute((trx) => rotateWebhookSecretIn(trx, webhook.id, 60_000));
  secrets = [second];
  await setTripStatus(stack.db, tripId, 'planning');
  await waitFor(() => received.length >= 2, { timeoutMs: 20_000, what: 'a delivery after the rotation' });
  secrets = [first];
  await setTripStatus(stack.db, tripId, 'confirmed');
  await waitFor(() => received.length >= 3, {
    timeoutMs: 20_000,
    what: 'a delivery verified by the old secret',
  });
  expect(received.slice(1).map((r) => r.event.type === 'trip.status_changed' && r.event.data.to)).toEqual([
    'planning',
    'confirmed',
  ]);

  // A receiver with a wrong secret answers 400, which the dispatcher takes as a failure.
  secrets = ['whsec_wrong'];
  await setTripStatus(stack.db, tripId, 'active');
  await waitFor(() => refused.length >= 1, { timeoutMs: 20_000, what: 'a refused delivery' });
  expect(refused[0]).toBe('400');
  expect(refused.length).toBe(refused.filter((s) => s === '400').length);
}, 60_000);

const sample: Event = {
  object: 'event',
  id: 'evt_handler00000001',
  type: 'trip.created',
  created_at: '2026-11-21T10:15:30.123Z',
  related_object: { type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' },
  data: {},
};
const secret = 'whsec_handlertest';

async function post(url: string, body: string, headers: Record<string, string>) {
  const res = await fetch(url, { method: 'POST', body, headers });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
}

test('node:http handler: 200 and onEvent for a good delivery, 400 with the reason for each bad one, 500 when onEvent fails', async () => {
  const seen: string[] = [];
  let fail = false;
  const handler = createWebhookHandler({
    secrets: secret,
    onEvent: (event) => {
      if (fail) throw new Error('cannot store it');
      seen.push(event.id);
    },
  });
  const url = `http://${await listen(createHttpServer((req, res) => void handler(req, res)))}/`;
  const { body, headers } = signWebhookForTest(sample, secret);
  expect(await post(url, body, headers)).toEqual({ status: 200, body: { received: sample.id } });
  expect(seen).toEqual([sample.id]);
  const reasonOf = async (b: string, h: Record<string, string>) =>
    (await post(url, b, h)).body?.error?.reason;
  expect(await reasonOf(body, { 'content-type': 'application/json' })).toBe('missing_header');
  expect(await reasonOf(body, { ...headers, 'service-signature': 'nonsense' })).toBe('malformed_header');
  expect(await reasonOf(body.replace('trp_1', 'trp_2'), headers)).toBe('no_matching_signature');
  const old = signWebhookForTest(sample, secret, { timestamp: Math.floor(Date.now() / 1000) - 600 });
  expect(await reasonOf(old.body, old.headers)).toBe('timestamp_too_old');
  const ahead = signWebhookForTest(sample, secret, { timestamp: Math.floor(Date.now() / 1000) + 600 });
  expect(await reasonOf(ahead.body, ahead.headers)).toBe('timestamp_in_future');
  expect(seen).toHaveLength(1);
  fail = true;
  expect((await post(url, body, headers)).status).toBe(500);
  expect(() => createWebhookHandler({ secrets: undefined as never, onEvent: () => {} })).toThrow(/secrets/);
});

test('Express: the handler reads the raw body itself, or takes express.raw; after express.json it says why it cannot', async () => {
  const seen: string[] = [];
  const handler = createWebhookHandler({ secrets: secret, onEvent: (event) => void seen.push(event.id) });
  const app = express();
  app.post('/plain', handler);
  app.post('/raw', express.raw({ type: 'application/json' }), handler);
  app.post('/parsed', express.json(), handler);
  const errors: string[] = [];
  app.use((error: Error, _req: unknown, res: ServerResponse, _next: unknown) => {
    errors.push(error.message);
    res.statusCode = 500;
    res.end();
  });
  const base = `http://${await listen(createHttpServer(app))}`;
  const { body, headers } = signWebhookForTest(sample, secret);
  expect((await post(`${base}/plain`, body, headers)).status).toBe(200);
  expect((await post(`${base}/raw`, body, headers)).status).toBe(200);
  expect(seen).toEqual([sample.id, sample.id]);
  expect((await post(`${base}/parsed`, body, headers)).status).toBe(500);
  expect(errors[0]).toMatch(/body parser already turned the webhook body into an object.*express\.raw/);
});
