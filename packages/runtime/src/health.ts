import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthChecks {
  /** Alive: the process answers and its loops are not stuck. */
  live: () => Promise<boolean> | boolean;
  /** Ready: Postgres answers. */
  ready: () => Promise<boolean>;
}

/** /healthz and /readyz for Kubernetes probes; nothing else is served. */
export async function startHealthServer(port: number, checks: HealthChecks): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const check = path === '/healthz' ? checks.live : path === '/readyz' ? checks.ready : undefined;
    if (!check || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"not_found"}');
      return;
    }
    Promise.resolve()
      .then(check)
      .catch(() => false)
      .then((ok) => {
        res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, resolve);
  });
  return server;
}

export function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}
