// The demo webhook endpoint of scripts/start.sh (infra/demo/webhook-receiver.mts does the work).
// Its certificate comes from a throwaway CA written to DEMO_CA_FILE, which the demo dispatcher
// trusts through WEBHOOK_CA_FILE.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createTestCa } from '@trips/testkit';
import { serveDemoReceiver } from '../infra/demo/webhook-receiver.mts';

const secret = process.env.DEMO_WEBHOOK_SECRET;
const caFile = process.env.DEMO_CA_FILE ?? '.demo/ca.pem';
if (!secret) {
  console.error('demo-receiver: set DEMO_WEBHOOK_SECRET to the webhook secret tripctl printed');
  process.exit(2);
}

const tls = await createTestCa();
mkdirSync(dirname(caFile), { recursive: true });
writeFileSync(caFile, tls.ca);
serveDemoReceiver({ tls, secret, port: Number(process.env.DEMO_RECEIVER_PORT ?? 4000), host: '127.0.0.1' });
