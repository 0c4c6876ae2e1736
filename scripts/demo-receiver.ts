// The demo webhook endpoint of scripts/start.sh (infra/demo/webhook-receiver.mts does the work).
// Its key and certificate are in DEMO_TLS_DIR, issued by scripts/demo-cert.sh from the demo CA that
// the demo dispatcher trusts through WEBHOOK_CA_FILE.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveDemoReceiver } from '../infra/demo/webhook-receiver.mts';

const secret = process.env.DEMO_WEBHOOK_SECRET;
const tlsDir = process.env.DEMO_TLS_DIR ?? '.demo/receiver';
if (!secret) {
  console.error('demo-receiver: set DEMO_WEBHOOK_SECRET to the webhook secret tripctl printed');
  process.exit(2);
}

serveDemoReceiver({
  tls: { key: readFileSync(join(tlsDir, 'key.pem')), cert: readFileSync(join(tlsDir, 'cert.pem')) },
  secret,
  port: Number(process.env.DEMO_RECEIVER_PORT ?? 4000),
  host: '127.0.0.1',
});
