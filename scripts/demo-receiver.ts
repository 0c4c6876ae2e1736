// A local HTTPS webhook endpoint for the demo (scripts/start.sh): it verifies each delivery's
// signature exactly as docs/webhooks.md tells receivers to, prints one line per event and answers
// 204. Its certificate comes from a throwaway CA written to DEMO_CA_FILE, which the demo dispatcher
// trusts through WEBHOOK_CA_FILE.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { dirname } from 'node:path';
import { createTestCa } from '@trips/testkit';

const port = Number(process.env.DEMO_RECEIVER_PORT ?? 4000);
const secret = process.env.DEMO_WEBHOOK_SECRET;
const caFile = process.env.DEMO_CA_FILE ?? '.demo/ca.pem';
if (!secret) {
  console.error('demo-receiver: set DEMO_WEBHOOK_SECRET to the webhook secret tripctl printed');
  process.exit(2);
}

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

const tls = await createTestCa();
mkdirSync(dirname(caFile), { recursive: true });
writeFileSync(caFile, tls.ca);

const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const ok = verify(String(req.headers['service-signature'] ?? ''), body, secret);
    if (!ok) {
      console.log(`webhook ✗ rejected a delivery with a bad signature (${req.headers['service-event-id']})`);
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
    console.log(
      `webhook ✓ ${event.type} ${event.related_object.url}${data} (${event.id}, signature verified)`,
    );
    res.writeHead(204).end();
  });
});
server.listen(port, '127.0.0.1', () => console.log(`demo receiver on https://localhost:${port}/webhooks`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('SIGINT', () => server.close(() => process.exit(0)));
