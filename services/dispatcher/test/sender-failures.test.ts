import {
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
  type Socket,
} from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { createTestCa, startReceiver, type TestCa, type TestReceiver } from '@trips/testkit';
import { Sender, type AttemptResult } from '../src/sender.ts';
import { makeEvent } from './support.ts';

// Each way an attempt can end without a 2xx, as the attempts log records it: the class, and the
// error code the owner's words are told from (packages/settings/src/attempt-words.ts). These hold
// whatever HTTP client the Sender uses underneath: the codes are Node's, as they were with
// node:https, never a client library's own.

let ca: TestCa;
let sender: Sender;
let strict: Sender;
let receiver: TestReceiver;
/** A TLS endpoint that does with each connection what `onSecure` says, counting connections. */
let raw: TlsServer;
let rawPort: number;
let rawConnections = 0;
let onSecure: (socket: TLSSocket) => void = () => {};

beforeAll(async () => {
  ca = await createTestCa();
  sender = new Sender({ timeoutMs: 5_000, allowPrivateNetworks: true, ca: ca.ca });
  strict = new Sender({ timeoutMs: 5_000, allowPrivateNetworks: false, ca: ca.ca });
  receiver = await startReceiver(ca);
  raw = createTlsServer({ key: ca.key, cert: ca.cert }, (socket) => onSecure(socket));
  raw.on('connection', () => rawConnections++);
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  rawPort = (raw.address() as AddressInfo).port;
});
afterAll(async () => {
  sender?.close();
  strict?.close();
  await receiver?.close();
  await new Promise((resolve) => raw?.close(resolve));
});

const send = (url: string, through = sender) =>
  through.send({ url, event: makeEvent(), secrets: ['whsec_test'] });
const failure = (r: AttemptResult) => ({ statusCode: r.statusCode, error: r.error, detail: r.errorDetail });

/** A listening TCP server, closed again by the caller. */
async function listening(onConnection: (socket: Socket) => void): Promise<TcpServer> {
  const server = createTcpServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe('no answer', () => {
  test('nothing listening is connection_refused (ECONNREFUSED)', async () => {
    const closed = await listening(() => {});
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    expect(failure(await send(`https://localhost:${port}/hooks`))).toEqual({
      statusCode: null,
      error: 'connection_refused',
      detail: 'ECONNREFUSED',
    });
  });

  test('a connection closed during the handshake is connection_reset (ECONNRESET)', async () => {
    const closing = await listening((socket) => socket.destroy());
    try {
      const { port } = closing.address() as AddressInfo;
      expect(failure(await send(`https://localhost:${port}/hooks`))).toEqual({
        statusCode: null,
        error: 'connection_reset',
        detail: 'ECONNRESET',
      });
    } finally {
      await new Promise((resolve) => closing.close(resolve));
    }
  });

  test('a request read and its connection closed without an answer is connection_reset (ECONNRESET)', async () => {
    onSecure = (socket) => socket.once('data', () => socket.end());
    expect(failure(await send(`https://localhost:${rawPort}/hooks`))).toEqual({
      statusCode: null,
      error: 'connection_reset',
      detail: 'ECONNRESET',
    });
  });

  test('an answer that is not HTTP is invalid_answer, with what the parser said', async () => {
    onSecure = (socket) => socket.once('data', () => socket.end('HTTP/1.1 OK maybe\r\n\r\n'));
    const result = await send(`https://localhost:${rawPort}/hooks`);
    expect([result.statusCode, result.error]).toEqual([null, 'invalid_answer']);
    // Node's parser names it (HPE_INVALID_STATUS); undici 8.13's loses the name and gives the reason.
    expect(result.errorDetail).toMatch(/^HPE(_INVALID_STATUS| Invalid status code)$/);
  });

  test('a name that does not resolve is dns', async () => {
    const result = await send('https://no-such-host.invalid/hooks');
    expect([result.statusCode, result.error]).toEqual([null, 'dns']);
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(result.errorDetail);
  });

  test('a certificate no one trusts is tls, with OpenSSL’s code', async () => {
    const untrusting = new Sender({ timeoutMs: 5_000, allowPrivateNetworks: true });
    try {
      expect(failure(await send(receiver.url, untrusting))).toEqual({
        statusCode: null,
        error: 'tls',
        detail: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      });
    } finally {
      untrusting.close();
    }
  });

  test('no status line within the timeout is timeout (ETIMEDOUT), and the attempt ends at it', async () => {
    const quick = new Sender({ timeoutMs: 500, allowPrivateNetworks: true, ca: ca.ca });
    onSecure = (socket) => socket.resume(); // reads, never answers
    try {
      const result = await send(`https://localhost:${rawPort}/hooks`, quick);
      expect(failure(result)).toEqual({ statusCode: null, error: 'timeout', detail: 'ETIMEDOUT' });
      expect(result.durationMs).toBeGreaterThanOrEqual(450);
      expect(result.durationMs).toBeLessThan(1_500);
    } finally {
      quick.close();
    }
  });

  test.each(['http://localhost/hooks', 'ftp://localhost/hooks', 'not a url'])(
    '%s is invalid_url and never sent',
    async (url) => {
      expect(failure(await send(url))).toEqual({ statusCode: null, error: 'invalid_url', detail: undefined });
    },
  );
});

describe('the SSRF guard, with private networks refused', () => {
  test.each([
    ['a name that resolves to loopback', 'localhost'],
    ['an IPv4 literal', '127.0.0.1'],
    ['an IPv6 literal', '[::1]'],
  ])('%s is ssrf_blocked and never connected to', async (_, host) => {
    const before = rawConnections;
    expect(failure(await send(`https://${host}:${rawPort}/hooks`, strict))).toEqual({
      statusCode: null,
      error: 'ssrf_blocked',
      detail: 'ssrf_blocked',
    });
    expect(rawConnections).toBe(before);
  });
});

describe('answers that are not a 2xx', () => {
  test('a redirect is not followed', async () => {
    receiver.answer = () => ({ status: 302, headers: { location: `${receiver.url}/elsewhere` } });
    const before = receiver.requests.length;
    const result = await send(receiver.url);
    expect(result).toMatchObject({ statusCode: 302, error: 'redirect' });
    expect(receiver.requests.length).toBe(before + 1);
  });

  test('a 429 asks to wait as its Retry-After says, kept among its headers as lines', async () => {
    receiver.answer = () => ({ status: 429, headers: { 'Retry-After': '7', 'X-Limit': 'yes' } });
    const result = await send(receiver.url);
    expect(result).toMatchObject({
      statusCode: 429,
      error: 'http_status',
      backPressure: { retryAfterMs: 7_000 },
    });
    expect(result.responseHeaders).toMatch(/^Retry-After: 7$/m);
    expect(result.responseHeaders).toMatch(/^X-Limit: yes$/m);
  });

  test('a 503 without a Retry-After asks to wait for no time given', async () => {
    receiver.answer = () => ({ status: 503 });
    const result = await send(receiver.url);
    expect(result).toMatchObject({ statusCode: 503, error: 'http_status', backPressure: {} });
    expect(result.backPressure?.retryAfterMs).toBeUndefined();
  });

  test('a 500 is http_status, keeps its first KiB, and does not ask to wait', async () => {
    receiver.answer = () => ({ status: 500, body: 'é'.repeat(2_000) });
    const result = await send(receiver.url);
    expect(result).toMatchObject({ statusCode: 500, error: 'http_status', bodyCut: false });
    expect(result.body).toBe('é'.repeat(512));
    expect(result.backPressure).toBeUndefined();
  });
});

test('one POST with the D7 headers, its content-length the body’s bytes', async () => {
  receiver.answer = () => ({ status: 204 });
  const before = receiver.requests.length;
  const result = await send(receiver.url);
  expect(result).toMatchObject({ statusCode: 204, error: null, body: '' });
  const requests = receiver.requests.slice(before);
  expect(requests).toHaveLength(1);
  const [request] = requests;
  expect(request!.method).toBe('POST');
  expect(request!.headers['content-length']).toBe(String(Buffer.byteLength(request!.body)));
  expect(request!.headers['content-type']).toBe('application/json');
  expect(request!.headers['service-signature']).toBe(result.signature);
});
