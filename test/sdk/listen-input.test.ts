import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@trips/testkit';
import { verifyWebhook, type Event } from '../../packages/sdk/src/index.ts';

// `trips listen` takes nothing it reads on trust (issue 40, items 4 and 7). The real API never
// sends a bad event, so here a stand-in plays the API (a server gone wrong, or a proxy in the
// way) and answers GET /api/v1/events with pages the test writes: every item that is not an
// event of the schema, or is too big to forward, is skipped with one escaped line and the cursor
// moves past it; what is printed never holds a control character from the server; and a body
// that is not a page of events ends the run with the command that resumes it.

const main = fileURLToPath(new URL('../../packages/sdk/src/cli/main.ts', import.meta.url));
const secret = 'whsec_listen_input_secret';
const key = 'tps_listeninputtest0000000000000000000';

interface Forwarded {
  headers: IncomingMessage['headers'];
  body: string;
}

let api: Server;
let receiver: Server;
let apiUrl: string;
let receiverUrl: string;
/** The `after` of each GET /api/v1/events, in order ('' for none). */
const reads: string[] = [];
/** The body for each `after`; an `after` not listed gets an empty page that stays there. */
let pages: Record<string, unknown> = {};
const forwarded: Forwarded[] = [];
const children: ChildProcess[] = [];

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );

beforeAll(async () => {
  api = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/events') return void res.writeHead(404).end();
    const after = url.searchParams.get('after') ?? '';
    reads.push(after);
    const body = pages[after] ?? { object: 'list', data: [], next_cursor: after || 'c0', has_more: false };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      forwarded.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  apiUrl = await listen(api);
  receiverUrl = `${await listen(receiver)}/webhooks`;
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const server of [api, receiver]) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
beforeEach(() => {
  reads.length = 0;
  forwarded.length = 0;
  pages = {};
});

function start(args: string[] = [], forwardTo = receiverUrl) {
  const child = spawn(
    process.execPath,
    [main, 'listen', '--forward-to', forwardTo, '--secret', secret, ...args],
    {
      env: { ...process.env, TRIPS_API_KEY: key, TRIPS_BASE_URL: apiUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  const run = { child, output: '', exit: once(child, 'exit') as Promise<[number | null]> };
  child.stdout!.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  return run;
}

const event = (id: string, overrides: Record<string, unknown> = {}) => ({
  object: 'event',
  id,
  type: 'trip.created',
  created_at: '2026-11-21T10:15:30.123Z',
  related_object: { type: 'trip', id: 'trp_4kXq9ZtR2mB7nW1c', url: '/api/v1/trips/trp_4kXq9ZtR2mB7nW1c' },
  data: {},
  ...overrides,
});

/** Control characters a terminal acts on: none may reach it from the server. */
// eslint-disable-next-line no-control-regex -- finding them is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

test('an item that is not an event, or is too big, is skipped with one escaped line; the good ones are forwarded and the cursor moves on', async () => {
  pages.c0 = {
    object: 'list',
    data: [
      { hello: 'not an event' },
      event('evt_header\r\nX-Injected: 1'),
      event('evt_clear', { type: 'trip.created\u001b[2J\u001b[31m' }),
      event('evt_first'),
      event('evt_wrong_object', { type: 'payment.paid' }),
      event('evt_extra', { note: 'a field the schema does not have' }),
      event('evt_status', { type: 'trip.status_changed', data: { from: 'proposal', to: 'gone\u0007' } }),
      event(`evt_${'x'.repeat(1 << 20)}`), // 1 MiB: a valid shape, too big to forward
      event('evt_second', { type: 'trip.status_changed', data: { from: 'proposal', to: 'planning' } }),
    ],
    next_cursor: 'c1',
    has_more: false,
  };
  const run = start();
  await waitFor(() => forwarded.length >= 2 && reads.includes('c1'), {
    what: 'the good events forwarded and the cursor past the page',
  });
  const events = forwarded.map((f) => verifyWebhook(f.body, f.headers, secret));
  expect(events.map((e: Event) => e.id)).toEqual(['evt_first', 'evt_second']);
  expect(run.child.exitCode).toBeNull(); // still listening: nothing behind a bad item waits

  const skipped = run.output.split('\n').filter((line) => line.includes('skipped'));
  expect(skipped).toHaveLength(7);
  expect(skipped[0]).toMatch(/not an event/);
  expect(skipped[1]).toContain('evt_header\\r\\nX-Injected: 1');
  expect(skipped[2]).toContain('trip.created\\x1b[2J\\x1b[31m');
  expect(skipped[3]).toMatch(/related_object\.type is 'trip'.*payment\.paid/);
  expect(skipped[4]).toMatch(/note/);
  expect(skipped[5]).toContain('gone\\x07');
  expect(skipped[6]).toMatch(/1\.0 MiB.*over the 64 KiB/);
  for (const line of skipped) expect(line.length).toBeLessThan(400);
  expect(run.output).not.toMatch(CONTROL);
  expect(run.output).not.toContain('x'.repeat(1000));

  run.child.kill('SIGINT');
  const [code] = await run.exit;
  expect(code).toBe(0);
  expect(run.output).toContain(`--after c1`);
});

test('an answer that is not a page of events ends the run, saying so, with the command that resumes it', async () => {
  pages.c0 = { object: 'list', data: [event('evt_before')], next_cursor: 'c1', has_more: false };
  pages.c1 = { object: 'list', data: 'not a list', next_cursor: 'c2', has_more: false };
  const run = start(['--events', 'trip.created']);
  const [code] = await run.exit;
  expect(code).toBe(1);
  expect(forwarded.map((f) => JSON.parse(f.body).id)).toEqual(['evt_before']);
  expect(run.output).toMatch(/not a page of events/);
  expect(run.output).toContain(
    `trips listen --forward-to ${receiverUrl} --events trip.created --secret ${secret} --after c1`,
  );
  expect(run.output).not.toMatch(/\n\s+at /);
});

test('a cursor that could not be pasted into a shell safely is refused, not printed', async () => {
  pages.c0 = { object: 'list', data: [], next_cursor: 'c1\n$(touch /tmp/x)\u001b[2J', has_more: false };
  const run = start();
  const [code] = await run.exit;
  expect(code).toBe(1);
  expect(run.output).toMatch(/not a page of events/);
  expect(run.output).not.toMatch(CONTROL);
  expect(run.output).not.toContain('touch');
  expect(run.output).toContain('--after c0');
});

test('events tail checks what it prints the same way: stdout keeps only events, a line on stderr says what was skipped', async () => {
  pages.c0 = {
    object: 'list',
    data: [event('evt_bad\u001b]0;title\u0007'), event('evt_good'), { object: 'event' }],
    next_cursor: 'c1',
    has_more: false,
  };
  const child = spawn(process.execPath, [main, 'events', 'tail', '--json'], {
    env: { ...process.env, TRIPS_API_KEY: key, TRIPS_BASE_URL: apiUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await waitFor(() => reads.includes('c1'), { what: 'tail past the page' });
  child.kill('SIGINT');
  await once(child, 'exit');
  const printed = stdout.split('\n').filter((line) => line.startsWith('{'));
  expect(printed.map((line) => JSON.parse(line).id)).toEqual(['evt_good']);
  expect(stderr.split('\n').filter((line) => line.includes('skipped'))).toHaveLength(2);
  expect(stderr + stdout).not.toMatch(CONTROL);
  expect(stdout).toContain('trips events tail --json --after c1');
});

test('forwarding to something that closes the connection unanswered says what that likely is', async () => {
  // What --forward-to http://… meets at an HTTPS server, such as the demo's own receiver.
  const closer = createNetServer((socket) => socket.once('data', () => socket.destroy()));
  const port = await new Promise<number>((resolve) =>
    closer.listen(0, '127.0.0.1', () => resolve((closer.address() as AddressInfo).port)),
  );
  try {
    pages.c0 = { object: 'list', data: [event('evt_unanswered')], next_cursor: 'c1', has_more: false };
    const run = start([], `http://127.0.0.1:${port}/webhooks`);
    await waitFor(() => run.output.includes('closed the connection'), { what: 'the failed forward' });
    expect(run.output).toMatch(/closed the connection without an answer: is something else listening there/);
    run.child.kill('SIGINT');
    await run.exit;
  } finally {
    await new Promise((resolve) => closer.close(resolve));
  }
});
