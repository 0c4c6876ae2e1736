import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

// Not `import { createServer } from 'node:http'`: see the rule in eslint.config.js.
const { createServer } = process.getBuiltinModule('node:http');

export interface HealthChecks {
  /** Alive: the process answers and its loops are not stuck. Without it, /healthz is a 404. */
  live?: () => Promise<boolean> | boolean;
  /** Ready: its dependencies answer. Without it, /readyz is a 404. */
  ready?: () => Promise<boolean>;
  /** Served at GET /metrics in the Prometheus text format. */
  metrics?: Registry;
}

/** /healthz and /readyz for Kubernetes probes and /metrics for Prometheus; nothing else is served. */
export async function startHealthServer(port: number, checks: HealthChecks): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics' && req.method === 'GET' && checks.metrics) {
      const registry = checks.metrics;
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
      );
      return;
    }
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
