import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCa {
  /** The CA certificate's file, for WEBHOOK_CA_FILE. */
  caFile: string;
  ca: string;
  /** A server certificate signed by the CA for localhost, 127.0.0.1 and ::1. */
  key: string;
  cert: string;
  /** A self-signed certificate for the same names that no one trusts: a TLS failure on demand. */
  untrusted: { key: string; cert: string };
}

/**
 * A throwaway certificate authority made with the machine's openssl, so tests talk real HTTPS to
 * local receivers and pass the CA to the dispatcher through WEBHOOK_CA_FILE, as production would
 * trust a public CA. EC P-256 keys: made in milliseconds.
 */
export async function createTestCa(): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'trips-ca-'));
  const file = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const san = 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1';
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Trips Test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    '/CN=localhost',
  ]);
  await writeFile(file('ext.cnf'), `${san}\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.pem'),
    '-days',
    '2',
    '-extfile',
    file('ext.cnf'),
  ]);
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('untrusted.key'),
    '-out',
    file('untrusted.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=localhost',
    '-addext',
    san,
  ]);
  const read = (name: string) => readFile(file(name), 'utf8');
  return {
    caFile: file('ca.pem'),
    ca: await read('ca.pem'),
    key: await read('server.key'),
    cert: await read('server.pem'),
    untrusted: { key: await read('untrusted.key'), cert: await read('untrusted.pem') },
  };
}
