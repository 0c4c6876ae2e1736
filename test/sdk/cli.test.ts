import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from '@trips/testkit';
import { createWebhookHandler, type Event } from '../../packages/sdk/src/index.ts';
import { freePort } from '../system/cluster.ts';
import { insertTrip, startStack, type Stack } from './stack.ts';

// The `trips` command line (issue 25, item 7) against the real API and recorder: listen forwards
// new events to a local receiver that verifies them with the SDK, retries while nothing listens
// (and says so), prints the cursor on Ctrl-C; get prints an object; bad keys get clear words.

const run = promisify(execFile);
const main = fileURLToPath(new URL('../../packages/sdk/src/cli/main.ts', import.meta.url));
const secret = 'whsec_listen_test_secret';
let stack: Stack;
let agency: Awaited<ReturnType<Stack['agency']>>;
const children: ChildProcess[] = [];
let receiver: Server | undefined;

beforeAll(async () => {
  stack = await startStack();
  agency = await stack.agency();
}, 60_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  receiver?.close();
  receiver?.closeAllConnections();
  await stack?.stop();
}, 30_000);

const env = (key = agency.key) => ({ ...process.env, TRIPS_API_KEY: key, TRIPS_BASE_URL: stack.apiUrl });

async function trips(args: string[], key?: string) {
  return run(process.execPath, [main, ...args], { env: env(key) }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

test('listen forwards each new event signed as a delivery; it retries while nothing listens, and says what to do', async () => {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      main,
      'listen',
      '--forward-to',
      `http://127.0.0.1:${port}/webhooks`,
      '--secret',
      secret,
      '--events',
      'trip.created',
    ],
    { env: env(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(() => output.includes('Ready.'), { what: 'listen to start' });
  expect(output).toContain(`Webhook secret for your receiver: ${secret}`);

  const first = await insertTrip(stack.db, agency.agencyId, 'Forwarded');
  await waitFor(() => output.includes('nothing is listening'), { what: 'a refused forward' });
  expect(output).toContain(`nothing is listening at http://127.0.0.1:${port}/webhooks`);

  // The receiver starts late; the retried forward reaches it and verifies with the SDK.
  const received: Event[] = [];
  const handler = createWebhookHandler({ secrets: secret, onEvent: (event) => void received.push(event) });
  receiver = createServer((req, res) => void handler(req, res));
  receiver.listen(port, '127.0.0.1');
  await once(receiver, 'listening');
  await waitFor(() => received.length >= 1, { timeoutMs: 15_000, what: 'the retried forward' });
  const second = await insertTrip(stack.db, agency.agencyId, 'Forwarded too');
  await waitFor(() => received.length >= 2, { what: 'the second forward' });
  expect(received.map((e) => [e.type, e.related_object.id])).toEqual([
    ['trip.created', first],
    ['trip.created', second],
  ]);
  const line = new RegExp(`trip\\.created\\s+${received[1]!.id}\\s+→ 200\\s+\\d+ ms`);
  await waitFor(() => line.test(output), { what: 'the line of the second forward' });

  child.kill('SIGINT');
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
  const resume = /--after (\S+)/.exec(output)?.[1];
  expect(resume).toBeDefined();
  // tail from that cursor prints what came after it, and nothing already forwarded.
  const tail = spawn(process.execPath, [main, 'events', 'tail', '--after', resume!, '--json'], {
    env: env(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(tail);
  let lines = '';
  tail.stdout!.on('data', (chunk: Buffer) => (lines += chunk.toString()));
  const third = await insertTrip(stack.db, agency.agencyId, 'Tailed');
  await waitFor(() => lines.includes(third), { what: 'tail to print the third trip' });
  tail.kill('SIGINT');
  await once(tail, 'exit');
  const tailed = lines
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Event);
  expect(tailed.map((e) => e.related_object.id)).toEqual([third]);
}, 60_000);

test('trips get prints the object; unknown ids, bad keys and missing scopes get plain words, no stack', async () => {
  const tripId = await insertTrip(stack.db, agency.agencyId, 'Printed');
  const got = await trips(['trips', 'get', tripId]);
  expect(got.code).toBe(0);
  expect(JSON.parse(got.stdout)).toMatchObject({ object: 'trip', id: tripId, title: 'Printed' });

  const missing = await trips(['trips', 'get', 'trp_none']);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/trp_none.*404 not_found/);

  const revoked = await trips(['events', 'tail'], 'tps_notarealkey00000000000000000000000');
  expect(revoked.code).toBe(1);
  expect(revoked.stderr).toMatch(
    /The API refused the key \(401 unauthorized, request req_[\w-]+\): it is missing, mistyped or revoked/,
  );
  const noEvents = await stack.agency(['trips:read']);
  const scope = await trips(['listen', '--forward-to', 'http://127.0.0.1:9/x'], noEvents.key);
  expect(scope.code).toBe(1);
  expect(scope.stderr).toMatch(/events:read.*403 insufficient_scope/s);
  const none = await trips(['events', 'tail'], '');
  expect(none.code).toBe(2);
  expect(none.stderr).toContain('TRIPS_API_KEY is not set');
  for (const result of [missing, revoked, scope, none]) expect(result.stderr).not.toMatch(/\n\s+at /);
  expect((await trips(['listen', '--forward-to', 'localhost:4000'])).stderr).toContain('must be a full URL');
});
