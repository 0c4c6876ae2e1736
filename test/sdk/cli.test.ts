import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from '@trips/testkit';
import { createApiKey, revokeApiKey } from '@trips/db/api-keys';
import { createWebhookHandler, TripService, type Event } from '../../packages/sdk/src/index.ts';
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
const servers: Server[] = [];

beforeAll(async () => {
  stack = await startStack();
  agency = await stack.agency();
}, 60_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of servers) {
    server.close();
    server.closeAllConnections();
  }
  await stack?.stop();
}, 30_000);

const env = (key = agency.key) => ({ ...process.env, TRIPS_API_KEY: key, TRIPS_BASE_URL: stack.apiUrl });

async function trips(args: string[], key?: string) {
  return run(process.execPath, [main, ...args], { env: env(key) }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** `trips listen …` as a child process; `output` gathers its stdout and stderr as they come. */
function startListen(args: string[], key?: string) {
  const child = spawn(process.execPath, [main, 'listen', ...args], {
    env: env(key),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const listener = { child, output: '', exit: once(child, 'exit') as Promise<[number | null]> };
  child.stdout!.on('data', (chunk: Buffer) => (listener.output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (listener.output += chunk.toString()));
  return listener;
}

/** A receiver on 127.0.0.1:`port` that answers with `handle`; closed after the file. */
async function startReceiver(port: number, handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer(handle);
  servers.push(server);
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

test('listen forwards each new event signed as a delivery; it retries while nothing listens, and says what to do', async () => {
  const port = await freePort();
  const listener = startListen([
    '--forward-to',
    `http://127.0.0.1:${port}/webhooks`,
    '--secret',
    secret,
    '--events',
    'trip.created',
  ]);
  const { child } = listener;
  await waitFor(() => listener.output.includes('Ready.'), { what: 'listen to start' });
  expect(listener.output).toContain(`Webhook secret for your receiver: ${secret}`);

  const first = await insertTrip(stack.db, agency.agencyId, 'Forwarded');
  await waitFor(() => listener.output.includes('nothing is listening'), { what: 'a refused forward' });
  expect(listener.output).toContain(`nothing is listening at http://127.0.0.1:${port}/webhooks`);

  // The receiver starts late; the retried forward reaches it and verifies with the SDK.
  const received: Event[] = [];
  const handler = createWebhookHandler({ secrets: secret, onEvent: (event) => void received.push(event) });
  await startReceiver(port, (req, res) => void handler(req, res));
  await waitFor(() => received.length >= 1, { timeoutMs: 15_000, what: 'the retried forward' });
  const second = await insertTrip(stack.db, agency.agencyId, 'Forwarded too');
  await waitFor(() => received.length >= 2, { what: 'the second forward' });
  expect(received.map((e) => [e.type, e.related_object.id])).toEqual([
    ['trip.created', first],
    ['trip.created', second],
  ]);
  const line = new RegExp(`trip\\.created\\s+${received[1]!.id}\\s+→ 200\\s+\\d+ ms`);
  await waitFor(() => line.test(listener.output), { what: 'the line of the second forward' });

  child.kill('SIGINT');
  const [code] = await once(child, 'exit');
  expect(code).toBe(0);
  const resume = /--after (\S+)/.exec(listener.output)?.[1];
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

test('listen on its first use: a 4xx from the receiver shows its status, its reason escaped and the secret to verify with', async () => {
  const port = await freePort();
  // The SDK's own handler, set up with the webhook's secret instead of the one listen printed.
  const handler = createWebhookHandler({ secrets: 'whsec_the_webhooks_own', onEvent: () => undefined });
  let answer: 'sdk' | 'raw' = 'sdk';
  await startReceiver(port, (req, res) => {
    if (answer === 'sdk') return void handler(req, res);
    res.writeHead(422).end(`bad \u001b[31mthing\r ${'y'.repeat(500)}\nsecond line`);
  });
  const listener = startListen(['--forward-to', `http://127.0.0.1:${port}/hook`, '--events', 'trip.created']);
  await waitFor(() => listener.output.includes('Ready.'), { what: 'listen to start' });
  await insertTrip(stack.db, agency.agencyId, 'Refused');
  await waitFor(() => listener.output.includes('answered 400'), { what: 'the refused forward' });
  const refused = listener.output.split('\n').find((l) => l.includes('answered 400'))!;
  expect(refused).toContain('no_matching_signature');
  expect(refused).toMatch(/verif\w+ with the secret .*printed at start/);
  expect(refused).toMatch(/not (the|your) webhook's/);

  answer = 'raw';
  await waitFor(() => listener.output.includes('answered 422'), { what: 'the raw 4xx' });
  const raw = listener.output.split('\n').find((l) => l.includes('answered 422'))!;
  expect(raw).toContain('bad \\x1b[31mthing\\r yyy');
  expect(raw).not.toContain('y'.repeat(300)); // the reason is cut
  expect(raw).toContain('…');
  expect(listener.output).not.toContain('second line');
  expect(listener.output).not.toContain('\u001b');
  listener.child.kill('SIGINT');
  await listener.exit;
});

test('listen forwards within a second of the receiver coming back, however long it was down', async () => {
  const port = await freePort();
  const listener = startListen(['--forward-to', `http://127.0.0.1:${port}/hook`, '--events', 'trip.created']);
  await waitFor(() => listener.output.includes('Ready.'), { what: 'listen to start' });
  await insertTrip(stack.db, agency.agencyId, 'Waiting');
  // By the fourth refusal the backoff has grown to seconds.
  await waitFor(() => /nothing is listening.*attempt 4\)/.test(listener.output), {
    timeoutMs: 20_000,
    what: 'four refused forwards',
  });
  let receivedAt: number | undefined;
  const started = Date.now();
  await startReceiver(port, (req, res) => {
    receivedAt ??= Date.now();
    res.writeHead(200).end();
  });
  await waitFor(() => receivedAt, { timeoutMs: 10_000, what: 'the forward after the receiver started' });
  expect(receivedAt! - started).toBeLessThan(1_500);
  listener.child.kill('SIGINT');
  await listener.exit;
}, 60_000);

test('listen prints the command that resumes it when it ends for a revoked key, not only on Ctrl-C', async () => {
  const own = await stack.agency();
  const port = await freePort();
  const received: Event[] = [];
  const handler = createWebhookHandler({ secrets: secret, onEvent: (event) => void received.push(event) });
  await startReceiver(port, (req, res) => void handler(req, res));
  const listener = startListen(
    ['--forward-to', `http://127.0.0.1:${port}/hook`, '--secret', secret, '--events', 'trip.created'],
    own.key,
  );
  await waitFor(() => listener.output.includes('Ready.'), { what: 'listen to start' });
  const forwarded = await insertTrip(stack.db, own.agencyId, 'Before the revocation');
  await waitFor(() => received.length === 1, { what: 'the forward' });
  await revokeApiKey(stack.db, own.keyId);
  const [code] = await listener.exit;
  expect(code).toBe(1);
  expect(listener.output).toMatch(/The API refused the key \(401 unauthorized/);
  const resume = new RegExp(
    `trips listen --forward-to http://127\\.0\\.0\\.1:${port}/hook --events trip\\.created --secret ${secret} --after (\\S+)`,
  ).exec(listener.output);
  expect(resume).not.toBeNull();
  // The cursor is past what was forwarded: read after it with a new key, only the later trip comes.
  const key = await createApiKey(stack.db, { agencyId: own.agencyId, scopes: ['trips:read', 'events:read'] });
  const later = await insertTrip(stack.db, own.agencyId, 'After the revocation');
  const client = new TripService({ apiKey: key.key, baseUrl: stack.apiUrl });
  const events = await waitFor(async () => {
    const page = await client.events.list({ after: resume![1], types: ['trip.created'] });
    return page.data.length > 0 && page.data;
  });
  expect(events.map((e) => e.related_object.id)).toEqual([later]);
  expect(received.map((e) => e.related_object.id)).toEqual([forwarded]);
});

test('listen signs both header sets: a receiver of the Standard Webhooks set alone verifies with the form listen prints', async () => {
  const own = await stack.agency();
  const port = await freePort();
  const received: Event[] = [];
  let standardForm = '';
  await startReceiver(port, (req, res) => {
    // What a receiver using only a Standard Webhooks library sees of the delivery.
    delete req.headers['service-signature'];
    const handler = createWebhookHandler({
      secrets: standardForm,
      onEvent: (event) => void received.push(event),
    });
    void handler(req, res);
  });
  const listener = startListen(
    ['--forward-to', `http://127.0.0.1:${port}/hook`, '--events', 'trip.created'],
    own.key,
  );
  await waitFor(() => listener.output.includes('Ready.'), { what: 'listen to start' });
  const printed =
    /Webhook secret for your receiver: (whsec_\S+)\nThe same secret for Standard Webhooks libraries: (whsec_\S+)\n/.exec(
      listener.output,
    );
  expect(printed).not.toBeNull();
  standardForm = printed![2]!;
  expect(Buffer.from(standardForm.slice(6), 'base64')).toEqual(
    Buffer.from(printed![1]!.slice(6), 'base64url'),
  );
  const forwarded = await insertTrip(stack.db, own.agencyId, 'Standard');
  await waitFor(() => received.length === 1, { what: 'the forward' });
  expect(received[0]!.related_object.id).toBe(forwarded);
  listener.child.kill('SIGINT');
  await listener.exit;
});

test('a key holding characters no key has is refused before use, and never printed', async () => {
  const key = `${agency.key}\nx`;
  for (const args of [
    ['listen', '--forward-to', 'http://127.0.0.1:9/x'],
    ['events', 'tail'],
  ]) {
    const result = await trips(args, key);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('the API key is not valid (it holds characters a key never has)');
    expect(result.stdout + result.stderr).not.toContain(agency.key);
    expect(result.stdout + result.stderr).not.toContain(agency.key.slice(4, 20));
  }
});

test('the help says where listen sends what it forwards, and how it is signed', async () => {
  const help = (await trips(['--help'])).stdout.replace(/\s+/g, ' ');
  expect(help).toContain('signed with a per-run secret (printed at start in both its forms');
  expect(help).toContain("with both header sets, Service-Signature and Standard Webhooks'");
  expect(help).toContain('goes wherever --forward-to says');
});

test('a cursor the API refuses ends listen with the reason, and no command resuming from that cursor', async () => {
  const result = await trips(['listen', '--forward-to', 'http://127.0.0.1:9/x', '--after', 'made-up']);
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/400 invalid_request/);
  expect(result.stdout).not.toContain('To resume');
});
