// Demo only (docker-compose.yml's demo-setup service): prepares, once per fresh `demo` volume, what
// the demo receiver and the dispatcher share. A throwaway CA and a certificate for the receiver's
// compose host name (the dispatcher trusts the CA through WEBHOOK_CA_FILE), a demo agency with data
// and an API key (tripctl demo seed), and a webhook to the receiver (tripctl webhook create). It
// prints the API key and a curl line; `docker compose logs demo-setup` shows them again.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.DEMO_DIR ?? '/demo';
const receiverUrl = new URL(process.env.DEMO_RECEIVER_URL ?? 'https://demo-receiver:4000/webhooks');
const apiBaseUrl = process.env.DEMO_API_BASE_URL ?? 'http://localhost:3000';
const tripctlMain = process.env.TRIPCTL_MAIN ?? '/app/packages/tripctl/src/main.ts';
const file = (name: string) => join(dir, name);
const say = (line: string) => process.stdout.write(`${line}\n`);

function tripctl<T>(...args: string[]): T {
  const out = execFileSync(process.execPath, [tripctlMain, ...args, '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out) as T;
}

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The same shape as packages/testkit's test CA, but for the receiver's compose host name. */
function makeCertificates(host: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca-key.pem'),
    '-out',
    file('ca.pem'),
    '-days',
    '365',
    '-subj',
    '/CN=Trips demo CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  );
  openssl(
    'req',
    ...ec,
    '-keyout',
    file('receiver-key.pem'),
    '-out',
    file('receiver.csr'),
    '-subj',
    `/CN=${host}`,
  );
  writeFileSync(
    file('receiver-ext.cnf'),
    `subjectAltName=${[...new Set([host, 'localhost'])].map((name) => `DNS:${name}`).join(',')}\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    file('receiver.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca-key.pem'),
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    '365',
    '-extfile',
    file('receiver-ext.cnf'),
    '-out',
    file('receiver.pem'),
  );
}

interface DemoState {
  agency_id: string;
  webhook_id: string;
  secret: string;
  key: string;
  curl: string;
}

function stillThere(state: DemoState): boolean {
  try {
    const list = tripctl<{ webhooks: { id: string }[] }>('webhook', 'list', '--agency', state.agency_id);
    return list.webhooks.some((w) => w.id === state.webhook_id);
  } catch {
    return false; // the database was reset under a kept volume: seed again
  }
}

if (!existsSync(file('ca.pem'))) makeCertificates(receiverUrl.hostname);

let state: DemoState | undefined;
if (existsSync(file('demo.json'))) {
  state = JSON.parse(readFileSync(file('demo.json'), 'utf8')) as DemoState;
  if (!stillThere(state)) state = undefined;
}
if (!state) {
  const seed = tripctl<{ agency_id: string; key: string; curl: string }>(
    'demo',
    'seed',
    '--base-url',
    apiBaseUrl,
  );
  const webhook = tripctl<{ id: string; secret: string }>(
    'webhook',
    'create',
    '--agency',
    seed.agency_id,
    '--events',
    'all',
    '--url',
    receiverUrl.href,
    '--description',
    'demo receiver (docker compose)',
  );
  state = {
    agency_id: seed.agency_id,
    webhook_id: webhook.id,
    secret: webhook.secret,
    key: seed.key,
    curl: seed.curl,
  };
  writeFileSync(file('demo.json'), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

say(`Demo agency ${state.agency_id}, webhook ${state.webhook_id} → ${receiverUrl.href}`);
say(`Demo API key: ${state.key}`);
say(`  ${state.curl}`);
say(`  curl -H "Authorization: Bearer ${state.key}" ${apiBaseUrl}/api/v1/events`);
say('Deliveries: docker compose logs -f demo-receiver. E-mails: http://localhost:8025.');
