// The webhook receiver of `pnpm bench:fairness`, in its own process so its TLS and HTTP work never
// shares the event loop of the bench or of another receiver (agency B's arrivals are timed in a
// receiver of their own, so agency A's flood of deliveries cannot delay B's timestamps). One HTTPS
// server; the first segment of a path says how it answers:
//   /fast/…     200 at once
//   /slow/…     200 after BENCH_SLOW_MS (2 s)
//   /hang/…     reads the request and never answers (the dispatcher gives up at WEBHOOK_TIMEOUT)
//   /trickle/…  200 and its headers at once, then the body a byte a second, never ending (it stops
//               after BENCH_TRICKLE_MAX_SECONDS, long past any sane timeout)
// Per path it counts requests and distinct trips (the event's related_object.id), and when the
// last new trip arrived. Driven over the IPC channel:
//   parent → { id, op: 'stats' }     ← { id, at, paths: { [path]: { requests, distinct, lastNewAt } } }
//   parent → { id, op: 'arrivals' }  ← { id, arrivals: [path, tripId, at, recordedAt][] } (since the last call)
// `at` is epoch milliseconds with sub-millisecond precision (timeOrigin + now), comparable with the
// parent's clock: both read the same system clock. `recordedAt` is the event's created_at (when the
// recorder recorded it).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const now = () => performance.timeOrigin + performance.now();
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 2_000);
const TRICKLE_MAX_SECONDS = Number(process.env.BENCH_TRICKLE_MAX_SECONDS ?? 120);
/** Paths whose every arrival is reported (agency B's): the others are only counted. */
const TIMED = new Set((process.env.BENCH_TIMED_PATHS ?? '').split(',').filter(Boolean));

interface PathStats {
  requests: number;
  trips: Set<string>;
  lastNewAt: number;
}
const stats = new Map<string, PathStats>();
let arrivals: [string, string, number, number][] = [];
/** Answers still open (hanging, trickling, slow), ended when the process stops. */
const open = new Set<ServerResponse>();

function note(path: string, body: Buffer, at: number): void {
  let entry = stats.get(path);
  if (!entry) stats.set(path, (entry = { requests: 0, trips: new Set(), lastNewAt: 0 }));
  entry.requests++;
  let event: { related_object?: { id?: string }; created_at?: string };
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  const tripId = event.related_object?.id;
  if (!tripId) return;
  if (!entry.trips.has(tripId)) {
    entry.trips.add(tripId);
    entry.lastNewAt = at;
  }
  if (TIMED.has(path)) arrivals.push([path, tripId, at, Date.parse(event.created_at ?? '')]);
}

function answer(path: string, res: ServerResponse, at: number, body: Buffer): void {
  const mode = path.split('/')[1];
  switch (mode) {
    case 'slow': {
      open.add(res);
      const timer = setTimeout(() => {
        open.delete(res);
        // Counted when answered: a delivery the dispatcher gave up on before is no delivery.
        if (!res.destroyed) {
          note(path, body, now());
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        }
      }, SLOW_MS);
      res.on('close', () => {
        clearTimeout(timer);
        open.delete(res);
      });
      return;
    }
    case 'hang':
      note(path, body, at);
      open.add(res);
      res.on('close', () => open.delete(res));
      return;
    case 'trickle': {
      note(path, body, at);
      open.add(res);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || ++sent > TRICKLE_MAX_SECONDS) {
          clearInterval(timer);
          if (!res.destroyed) res.end();
          return;
        }
        res.write('.');
      }, 1_000);
      res.on('close', () => {
        clearInterval(timer);
        open.delete(res);
      });
      return;
    }
    default:
      note(path, body, at);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  }
}

const server = createServer(
  {
    // The test CA's server certificate, PEM in the environment.
    key: process.env.BENCH_TLS_KEY!,
    cert: process.env.BENCH_TLS_CERT!,
  },
  (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '';
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => answer(path, res, now(), Buffer.concat(chunks)));
  },
);
// Senders keep their connections warm: a reconnect would cost a TLS handshake.
server.keepAliveTimeout = 60_000;
// A hanging answer must hang until the sender gives up, not until Node's own request timeout.
server.requestTimeout = 0;

interface Command {
  id: number;
  op: 'stats' | 'arrivals';
}

process.on('message', (command: Command) => {
  const reply = (fields: object) => process.send!({ id: command.id, ...fields });
  switch (command.op) {
    case 'stats':
      return reply({
        at: now(),
        paths: Object.fromEntries(
          [...stats].map(([path, s]) => [
            path,
            { requests: s.requests, distinct: s.trips.size, lastNewAt: s.lastNewAt },
          ]),
        ),
      });
    case 'arrivals': {
      const taken = arrivals;
      arrivals = [];
      return reply({ arrivals: taken });
    }
  }
});
const exit = () => {
  for (const res of open) res.destroy();
  process.exit(0);
};
process.on('disconnect', exit);
process.on('SIGTERM', exit);

server.listen(0, '127.0.0.1', () => {
  process.send!({ ready: true, port: (server.address() as AddressInfo).port });
});
