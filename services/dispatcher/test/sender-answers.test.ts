import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describeAttempt } from '@trips/settings/attempt-words';
import { createTestCa, type TestCa } from '@trips/testkit';
import { Sender, type AttemptResult } from '../src/sender.ts';
import { makeEvent } from './support.ts';

// What one attempt makes of an answer it cannot read, and of a URL whose host is no name, in the
// words the delivery log shows for it.

let ca: TestCa;
let sender: Sender;
let server: Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  ca = await createTestCa();
  // Private networks allowed: the receiver is on this machine, and no SSRF check may explain a refusal.
  sender = new Sender({ timeoutMs: 5_000, allowPrivateNetworks: true, ca: ca.ca });
  server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    req.resume();
    const headerBytes = Number(new URL(req.url!, 'https://x').searchParams.get('header-bytes'));
    req.on('end', () => {
      // Several headers, each well under any limit of its own, together over Node's 16 KiB.
      const headers = Object.fromEntries(
        Array.from({ length: Math.ceil(headerBytes / 1000) }, (_, i) => [`x-filler-${i}`, 'f'.repeat(1000)]),
      );
      res.writeHead(200, headers).end('ok');
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  sender?.close();
  await new Promise((resolve) => server?.close(resolve));
});

const send = (url: string) => sender.send({ url, event: makeEvent(), secrets: ['whsec_test'] });
const words = (result: AttemptResult) =>
  describeAttempt({
    succeeded: result.error === null,
    status_code: result.statusCode,
    error: result.error,
    error_detail: result.errorDetail ?? null,
    duration_ms: result.durationMs,
    response_headers: result.responseHeaders ?? null,
  });

test('a 2xx with headers under 16 KiB is delivered', async () => {
  const result = await send(`https://localhost:${port}/hooks?header-bytes=8000`);
  expect([result.statusCode, result.error]).toEqual([200, null]);
});

test('a 2xx whose headers are over 16 KiB fails, and the log says why', async () => {
  const result = await send(`https://localhost:${port}/hooks?header-bytes=20000`);
  expect(result).toMatchObject({
    statusCode: null,
    error: 'invalid_answer',
    errorDetail: 'HPE_HEADER_OVERFLOW',
  });
  expect(words(result)).toBe(
    'answer headers over 16 KiB, so its status could not be read: send fewer or shorter headers',
  );
});

test.each(['localhost..', 'localhost...', '.localhost', 'a..localhost'])(
  'https://%s is not sent: its host is no name, whatever a resolver makes of it',
  async (host) => {
    const before = connections;
    const result = await send(`https://${host}:${port}/hooks`);
    expect([result.statusCode, result.error]).toEqual([null, 'invalid_url']);
    expect(words(result)).toBe('not sent: the URL is not a valid https URL');
    expect(connections).toBe(before);
  },
);
