// The webhook receiver of `pnpm bench:dispatcher`, in its own process so its TLS and HTTP work never
// shares the event loop of the load it measures. One HTTPS server, one path per webhook. It counts
// 2xx answers per path, notes when each end-to-end delivery arrived, and can be told to leave a
// path hanging (never answering) for the isolation phase. Driven over the IPC channel:
//   parent → { id, op: 'snapshot' }                  ← { id, at, counts }
//   parent → { id, op: 'hang' | 'answer', path }      ← { id }
//   parent → { id, op: 'arrivals' }                  ← { id, arrivals: [objectId, at, recordedAt][] }
// `at` is epoch milliseconds with sub-millisecond precision (timeOrigin + now), comparable with the
// parent's clock: both read the same system clock.
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const now = () => performance.timeOrigin + performance.now();

const counts: Record<string, number> = {};
const hanging = new Set<string>();
const held = new Map<string, Set<ServerResponse>>();
/** Per end-to-end delivery: the trip's id, when it arrived, and the event's created_at (when recorded). */
const arrivals: [string, number, number][] = [];

const server = createServer(
  {
    // The test CA's server certificate, PEM in the environment.
    key: process.env.BENCH_TLS_KEY!,
    cert: process.env.BENCH_TLS_CERT!,
  },
  (req, res) => {
    const path = req.url ?? '';
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (hanging.has(path)) {
        // A hanging endpoint: the request is read, the answer never comes (until told otherwise).
        let set = held.get(path);
        if (!set) held.set(path, (set = new Set()));
        set.add(res);
        res.on('close', () => set.delete(res));
        return;
      }
      if (path.startsWith('/e2e')) {
        const at = now();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          related_object: { id: string };
          created_at: string;
        };
        arrivals.push([body.related_object.id, at, Date.parse(body.created_at)]);
      }
      counts[path] = (counts[path] ?? 0) + 1;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  },
);
// Senders keep their connections warm between rounds: a reconnect would cost a TLS handshake.
server.keepAliveTimeout = 60_000;

interface Command {
  id: number;
  op: 'snapshot' | 'hang' | 'answer' | 'arrivals';
  path?: string;
}

process.on('message', (command: Command) => {
  const reply = (fields: object) => process.send!({ id: command.id, ...fields });
  switch (command.op) {
    case 'snapshot':
      return reply({ at: now(), counts: { ...counts } });
    case 'hang':
      hanging.add(command.path!);
      return reply({});
    case 'answer':
      hanging.delete(command.path!);
      for (const res of held.get(command.path!) ?? []) {
        if (!res.destroyed) res.writeHead(200).end('ok');
      }
      held.delete(command.path!);
      return reply({});
    case 'arrivals':
      return reply({ arrivals: arrivals.splice(0) });
  }
});
// Exits (rather than dies) on SIGTERM, so a --cpu-prof profile is written.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  process.send!({ ready: true, port: (server.address() as AddressInfo).port });
});
