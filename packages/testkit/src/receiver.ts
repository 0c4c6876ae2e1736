import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent: signatures are checked over it. */
  body: string;
  /** When the request arrived (Date.now()). */
  at: number;
}

export interface Answer {
  status?: number;
  /** Text is sent as UTF-8; a Buffer as its bytes (a page in another encoding, binary). */
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Wait this long before answering (a slow or hanging endpoint). */
  delayMs?: number;
}

export interface TestReceiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Decides each answer; the default answers 200. Tests change it at any time. */
  answer: (request: ReceivedRequest) => Answer;
  close(): Promise<void>;
}

/** A local HTTPS webhook endpoint whose answers a test sets, recording every request it gets. */
export async function startReceiver(
  tls: { key: string; cert: string },
  path = '/hooks',
): Promise<TestReceiver> {
  const sockets = new Set<Socket>();
  const receiver: TestReceiver = {
    url: '',
    port: 0,
    requests: [],
    answer: () => ({ status: 200, body: 'ok' }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      receiver.requests.push(request);
      const answer = receiver.answer(request);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
      else send();
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `https://localhost:${receiver.port}${path}`;
  return receiver;
}
