import { createServer, type Server } from 'node:https';
import type { ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createTestCa, startReceiver, waitFor, type TestCa } from '@trips/testkit';
import { Sender } from '../src/sender.ts';
import { makeEvent } from './support.ts';

const TIMEOUT_MS = 5_000;

let ca: TestCa;
let sender: Sender;

beforeAll(async () => {
  ca = await createTestCa();
  sender = new Sender({ timeoutMs: TIMEOUT_MS, allowPrivateNetworks: true, ca: ca.ca });
});

afterAll(() => sender?.close());

interface Endpoint {
  url: string;
  /** Whether the dispatcher has closed the answer it was sending. */
  closed: boolean;
  /** TCP connections the endpoint has accepted. */
  connections: number;
  close(): Promise<void>;
}

/**
 * An HTTPS endpoint that sends `status`, its headers and `ok` at once, then leaves the rest of the
 * answer to `then` (which the testkit's receiver, answering in one go, cannot do).
 */
async function startEndpoint(status: number, then: (res: ServerResponse) => void): Promise<Endpoint> {
  const sockets = new Set<Socket>();
  const server: Server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.write('ok');
      res.on('close', () => (endpoint.closed = true));
      then(res);
    });
  });
  server.on('connection', (socket: Socket) => {
    endpoint.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint: Endpoint = {
    url: `https://localhost:${(server.address() as AddressInfo).port}/hooks`,
    closed: false,
    connections: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return endpoint;
}

/** A byte every 500 ms, never ending. */
const trickle = (res: ServerResponse) => {
  const timer = setInterval(() => res.write('.'), 500);
  res.on('close', () => clearInterval(timer));
};

const send = (url: string, through = sender) =>
  through.send({ url, event: makeEvent(), secrets: ['whsec_test'] });

describe('once the headers are in, the status decides and the body gets a short grace', () => {
  test.each([
    [200, null],
    [500, 'http_status'],
  ])('a %i whose body trickles ends the attempt well before the timeout', async (status, error) => {
    const endpoint = await startEndpoint(status, trickle);
    try {
      const started = performance.now();
      const result = await send(endpoint.url);
      expect(result).toMatchObject({ statusCode: status, error, bodyCut: true });
      expect(result.body).toMatch(/^ok/);
      expect(result.durationMs).toBeLessThan(2_000);
      expect(performance.now() - started).toBeLessThan(2_000);
      // The connection is closed, not just left behind: the endpoint stops sending.
      await waitFor(() => endpoint.closed, { timeoutMs: 1_000, what: 'the connection to close' });
    } finally {
      await endpoint.close();
    }
  });

  test('a body that breaks off after the headers keeps what arrived and the outcome', async () => {
    const endpoint = await startEndpoint(200, (res) => setTimeout(() => res.destroy(), 50));
    try {
      const result = await send(endpoint.url);
      expect(result).toMatchObject({ statusCode: 200, error: null, body: 'ok', bodyCut: false });
    } finally {
      await endpoint.close();
    }
  });

  test('headers that come only after the timeout are a timeout', async () => {
    const quick = new Sender({ timeoutMs: 1_000, allowPrivateNetworks: true, ca: ca.ca });
    const late = await startReceiver(ca);
    try {
      late.answer = () => ({ status: 200, body: 'too late', delayMs: 2_000 });
      const result = await send(late.url, quick);
      expect(result).toMatchObject({ statusCode: null, error: 'timeout', body: null });
      expect(result.durationMs).toBeGreaterThanOrEqual(900);
      expect(result.durationMs).toBeLessThan(2_000);
    } finally {
      quick.close();
      await late.close();
    }
  });
});

describe('connections', () => {
  test('a whole answer leaves its connection for the next attempt; an answer cut short closes it', async () => {
    const whole = await startEndpoint(200, (res) => res.end());
    const cut = await startEndpoint(200, trickle);
    try {
      for (let i = 0; i < 3; i++)
        expect(await send(whole.url)).toMatchObject({ statusCode: 200, error: null });
      expect(whole.connections).toBe(1); // one TLS handshake for the three
      for (let i = 0; i < 2; i++) expect(await send(cut.url)).toMatchObject({ bodyCut: true });
      expect(cut.connections).toBe(2);
    } finally {
      await whole.close();
      await cut.close();
    }
  });
});
