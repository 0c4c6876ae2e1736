// The demo HTTPS webhook endpoint, shared by scripts/demo-receiver.ts (bash scripts/start.sh) and
// infra/demo/receiver.mts (docker-compose.yml): it verifies each delivery's signature exactly as
// docs/webhooks.md tells receivers to, prints one line per event and answers 204.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:https';

/** The receiver's side of D7: `t=<unix seconds>,v1=<hex>[,v1=<hex>]`, HMAC-SHA256 of `<t>.<raw body>`. */
export function verifySignature(
  header: string,
  rawBody: string,
  secret: string,
  toleranceSeconds = 300,
): boolean {
  const parts = header.split(',').map((part) => part.split('=', 2) as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${rawBody}`).digest();
  return parts.some(([k, v]) => {
    if (k !== 'v1') return false;
    const given = Buffer.from(v, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export interface ReceiverOptions {
  tls: { key: string | Buffer; cert: string | Buffer };
  secret: string;
  port: number;
  /** The interface to listen on: loopback for the local demo, every one in a container. */
  host?: string;
}

/** Serves until SIGTERM or SIGINT, then exits. */
export function serveDemoReceiver({ tls, secret, port, host }: ReceiverOptions): void {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verifySignature(String(req.headers['service-signature'] ?? ''), body, secret)) {
        say(`webhook ✗ rejected a delivery with a bad signature (${req.headers['service-event-id']})`);
        res.writeHead(400).end();
        return;
      }
      const event = JSON.parse(body) as {
        id: string;
        type: string;
        related_object: { url: string };
        data: object;
      };
      const data = Object.keys(event.data).length ? ` ${JSON.stringify(event.data)}` : '';
      say(`webhook ✓ ${event.type} ${event.related_object.url}${data} (${event.id}, signature verified)`);
      res.writeHead(204).end();
    });
  });
  server.listen(port, host, () => say(`demo receiver on https://${host ?? '0.0.0.0'}:${port}/webhooks`));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
