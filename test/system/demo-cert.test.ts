// scripts/demo-cert.sh, which gives an owner's own receiver in the demo a certificate that the
// demo's dispatcher trusts (issue 40, item 6; start.serial.test.ts delivers to one). Run from a copy
// in a checkout of its own, so the repository's .demo/ is left alone.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';

let checkout: string;
beforeEach(() => {
  checkout = mkdtempSync(join(tmpdir(), 'trips-demo-cert-'));
  mkdirSync(join(checkout, 'scripts'));
  copyFileSync(
    fileURLToPath(new URL('../../scripts/demo-cert.sh', import.meta.url)),
    join(checkout, 'scripts/demo-cert.sh'),
  );
});
afterEach(() => rmSync(checkout, { recursive: true, force: true }));

const demoCert = (...args: string[]) =>
  execFileSync('bash', ['scripts/demo-cert.sh', ...args], { cwd: checkout, encoding: 'utf8', stdio: 'pipe' });
const read = (path: string) => readFileSync(join(checkout, path), 'utf8');
const mode = (path: string) => statSync(join(checkout, path)).mode & 0o777;

/**
 * True when a TLS client trusting `ca` alone accepts a server with this key and certificate for
 * `host`; else why not (OpenSSL's words).
 */
async function trusted(
  tls: { key: string; cert: string },
  ca: string,
  host = 'localhost',
): Promise<boolean | string> {
  const server = createServer(tls, (_req, res) => res.end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    return await new Promise((resolve) => {
      const socket = connect(
        { host: '127.0.0.1', port: (server.address() as AddressInfo).port, servername: host, ca },
        () => {
          socket.end();
          resolve(true);
        },
      );
      socket.on('error', (error) => resolve(error.message));
    });
  } finally {
    server.close();
  }
}

test('a localhost certificate from a demo CA that is made once and kept; keys readable by their owner alone', async () => {
  const said = demoCert('mine');
  expect(said).toContain(`key:  mine/key.pem`);
  expect(said).toContain('add\nhttps://localhost:<its port>/<its path> as a webhook on the settings page');
  const ca = read('.demo/ca.pem');
  expect(mode('.demo/ca-key.pem')).toBe(0o600);
  expect(mode('mine/key.pem')).toBe(0o600);
  const mine = { key: read('mine/key.pem'), cert: read('mine/cert.pem') };
  expect(await trusted(mine, ca)).toBe(true);

  // Again, and with no directory: the same CA, so the first certificate stays trusted.
  demoCert();
  expect(read('.demo/ca.pem')).toBe(ca);
  expect(
    await trusted({ key: read('.demo/my-receiver/key.pem'), cert: read('.demo/my-receiver/cert.pem') }, ca),
  ).toBe(true);
  expect(await trusted(mine, ca)).toBe(true);
});

test('the CA vouches for localhost alone: a certificate it signs for another name is refused', async () => {
  demoCert('mine');
  const ext = join(checkout, 'ext.cnf');
  writeFileSync(ext, 'subjectAltName=DNS:bank.example\n');
  const file = (name: string) => join(checkout, name);
  execFileSync(
    'openssl',
    [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      file('other.key'),
      '-out',
      file('other.csr'),
      '-subj',
      '/CN=bank.example',
    ],
    { stdio: 'ignore' },
  );
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      file('other.csr'),
      '-CA',
      file('.demo/ca.pem'),
      '-CAkey',
      file('.demo/ca-key.pem'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      ext,
      '-out',
      file('other.pem'),
    ],
    { stdio: 'ignore' },
  );
  expect(
    await trusted({ key: read('other.key'), cert: read('other.pem') }, read('.demo/ca.pem'), 'bank.example'),
  ).toBe('permitted subtree violation');
});

test('a CA without its key, or with another key, is made anew, saying that earlier certificates need issuing again', async () => {
  const saysRemade = () =>
    execFileSync('bash', ['-c', 'bash scripts/demo-cert.sh mine 2>&1 >/dev/null'], {
      cwd: checkout,
      encoding: 'utf8',
    });
  const remade =
    'demo-cert: made a new demo CA: certificates from the old one are no longer trusted, so issue yours again\n';
  demoCert('mine');
  const first = read('.demo/ca.pem');
  rmSync(join(checkout, '.demo/ca-key.pem'));
  expect(saysRemade()).toBe(remade);
  const second = read('.demo/ca.pem');
  expect(second).not.toBe(first);
  // A certificate of another CA in ca.pem, as the receiver of an older start.sh wrote there.
  writeFileSync(join(checkout, '.demo/ca.pem'), first);
  expect(saysRemade()).toBe(remade);
  const third = read('.demo/ca.pem');
  expect([first, second]).not.toContain(third);
  expect(await trusted({ key: read('mine/key.pem'), cert: read('mine/cert.pem') }, third)).toBe(true);
  expect(saysRemade()).toBe('');
});
