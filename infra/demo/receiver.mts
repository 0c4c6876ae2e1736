// Demo only (docker-compose.yml's demo-receiver service): an HTTPS webhook endpoint that verifies
// each delivery's signature exactly as docs/webhooks.md tells receivers to, prints one line per
// event and answers 204. Like scripts/demo-receiver.ts, but it listens on every interface of its
// container and uses the certificate and webhook secret that infra/demo/setup.mts left in DEMO_DIR.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';

const dir = process.env.DEMO_DIR ?? '/demo';
const port = Number(process.env.DEMO_RECEIVER_PORT ?? 4000);
const { secret } = JSON.parse(readFileSync(join(dir, 'demo.json'), 'utf8')) as { secret: string };
const say = (line: string) => process.stdout.write(`${line}\n`);

/** The receiver's side of D7: `t=<unix seconds>,v1=<hex>[,v1=<hex>]`, HMAC-SHA256 of `<t>.<raw body>`. */
function verify(header: string, rawBody: string, key: string, toleranceSeconds = 300): boolean {
  const parts = header.split(',').map((part) => part.split('=', 2) as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', key).update(`${t}.${rawBody}`).digest();
  return parts.some(([k, v]) => {
    if (k !== 'v1') return false;
    const given = Buffer.from(v, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const server = createServer(
  { key: readFileSync(join(dir, 'receiver-key.pem')), cert: readFileSync(join(dir, 'receiver.pem')) },
  (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!verify(String(req.headers['service-signature'] ?? ''), body, secret)) {
        say(`webhook ✗ rejected a delivery with a bad signature (${req.headers['service-event-id']})`);
        res.writeHead(400).end();
        return;
      }
      const event = JSON.parse(body) as { id: string; type: string; related_object: { url: string } };
      say(`webhook ✓ ${event.type} ${event.related_object.url} (${event.id}, signature verified)`);
      res.writeHead(204).end();
    });
  },
);
server.listen(port, () => say(`demo receiver on https://0.0.0.0:${port}/webhooks`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
