// Demo only (docker-compose.yml's demo-receiver service): the demo webhook endpoint, listening on
// every interface of its container with the certificate and webhook secret that infra/demo/setup.mts
// left in DEMO_DIR.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serveDemoReceiver } from './webhook-receiver.mts';

const dir = process.env.DEMO_DIR ?? '/demo';
const { secret } = JSON.parse(readFileSync(join(dir, 'demo.json'), 'utf8')) as { secret: string };
serveDemoReceiver({
  tls: { key: readFileSync(join(dir, 'receiver-key.pem')), cert: readFileSync(join(dir, 'receiver.pem')) },
  secret,
  port: Number(process.env.DEMO_RECEIVER_PORT ?? 4000),
});
