import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { TripService, TripServiceError } from '../../packages/sdk/src/index.ts';
import { freePort } from '../system/cluster.ts';
import { insertTrip, startStack, type Stack } from './stack.ts';

// Retries, timeouts and aborts (issue 25, item 2): a real 429 from the API's rate limiter is
// waited out for Retry-After; a refused connection and a silent server are retried with backoff;
// a 4xx is never retried; an AbortSignal ends a call at once.

let stack: Stack;
let key: string;
let tripId: string;
let silent: Server;
let silentUrl: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // One request per second, a burst of one: the second call in a second gets a real 429.
  stack = await startStack({ apiEnv: { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' } });
  const agency = await stack.agency();
  key = agency.key;
  tripId = await insertTrip(stack.db, agency.agencyId);
  // Accepts connections and never answers: what a hung server looks like from the client.
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
}, 60_000);
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await stack?.stop();
}, 30_000);

const failure = (promise: PromiseLike<unknown>) =>
  Promise.resolve(promise).then(
    () => undefined,
    (error: unknown) => error as TripServiceError,
  );

test('a 429 is waited out for Retry-After and then succeeds; with no retries it is the error', async () => {
  // One retry only: the rate limiter's Retry-After is 1 s, and a retry sooner than that (the
  // 250–500 ms of the first backoff step) meets a 429 again and ends the call with it. So this
  // passes only if the client waits what Retry-After says.
  const client = new TripService({ apiKey: key, baseUrl: stack.apiUrl, maxRetries: 1 });
  const once = new TripService({ apiKey: key, baseUrl: stack.apiUrl, maxRetries: 0 });
  await client.trips.retrieve(tripId); // takes the one token
  const limited = await failure(once.trips.retrieve(tripId));
  expect(limited).toMatchObject({ status: 429, code: 'rate_limited' });
  expect(limited!.retryAfterSeconds).toBe(1);
  const started = Date.now();
  expect(await client.trips.retrieve(tripId)).toMatchObject({ id: tripId });
  // Its first attempt met a 429 saying 1 s; the retry came no sooner.
  expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
});

test('a 4xx is never retried', async () => {
  await new Promise((resolve) => setTimeout(resolve, 1_100)); // a fresh token
  const client = new TripService({ apiKey: key, baseUrl: stack.apiUrl, maxRetries: 5 });
  const started = Date.now();
  expect(await failure(client.trips.retrieve('trp_missing'))).toMatchObject({ code: 'not_found' });
  // A retry would have met the rate limit (one a second) and waited a second or more for it.
  expect(Date.now() - started).toBeLessThan(900);
});

test('a refused connection is retried with backoff, then reported as connection_error', async () => {
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const started = Date.now();
  const error = await failure(new TripService({ apiKey: key, baseUrl: nowhere, maxRetries: 0 }).trips.list());
  expect(error).toMatchObject({ status: 0, code: 'connection_error' });
  expect(error!.message).toContain(nowhere);
  const single = Date.now() - started;
  const retried = Date.now();
  await failure(new TripService({ apiKey: key, baseUrl: nowhere, maxRetries: 2 }).trips.list());
  // Two waits: 250–500 ms, then 500–1000 ms.
  expect(Date.now() - retried).toBeGreaterThanOrEqual(750 + single);
});

test('a server that never answers times out, each attempt, as code timeout', async () => {
  const client = new TripService({ apiKey: key, baseUrl: silentUrl, timeout: 200, maxRetries: 1 });
  const started = Date.now();
  const error = await failure(client.trips.list());
  expect(error).toBeInstanceOf(TripServiceError);
  expect(error).toMatchObject({ code: 'timeout', status: 0 });
  expect(Date.now() - started).toBeGreaterThanOrEqual(2 * 200 + 250);
});

test("the caller's AbortSignal ends a call at once with the signal's reason, without retrying", async () => {
  const client = new TripService({ apiKey: key, baseUrl: silentUrl, timeout: 10_000, maxRetries: 5 });
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(new Error('user went away')), 100);
  const error = await failure(client.trips.list({}, { signal: controller.signal }));
  expect(error).toEqual(new Error('user went away'));
  expect(Date.now() - started).toBeLessThan(1_000);
  await expect(client.trips.retrieve(tripId, { signal: AbortSignal.abort() })).rejects.toMatchObject({
    name: 'AbortError',
  });
});
