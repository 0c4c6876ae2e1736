import { execFileSync } from 'node:child_process';
import dns from 'node:dns/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import got, { type BeforeRequestHook } from 'got';
import { waitFor } from '@trips/testkit';
import { createSsrfGuard, isPublicAddress, SsrfBlocked, type SsrfGuard } from '../src/ssrf.ts';

/**
 * The guard given to an HTTP client with its two checks, as the dispatcher's Sender gives them to
 * https.request (its own tests cover that path): the lookup for names, and checkUrl for IP literals,
 * here in got's beforeRequest hook, which got runs again for every redirect it follows, so that
 * the guard is also shown to hold on a followed redirect, which the Sender never makes.
 */
function guardedGotOptions(guard: SsrfGuard): {
  dnsLookup: LookupFunction;
  hooks: { beforeRequest: BeforeRequestHook[] };
} {
  return {
    dnsLookup: guard.lookup,
    hooks: { beforeRequest: [(options) => void (options.url && guard.checkUrl(new URL(options.url)))] },
  };
}

describe('isPublicAddress', () => {
  test.each(['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (ip) => expect(isPublicAddress(ip)).toBe(true),
  );
  test.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '0.0.0.0/8'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.100.100.200', 'Alibaba metadata (CGNAT)'],
    ['169.254.169.254', 'AWS/GCP/Azure metadata (link-local)'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.2.1', 'documentation'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['224.0.0.1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['::7f00:1', 'IPv4-compatible (deprecated)'],
    ['::ffff:0:7f00:1', 'IPv4-translated'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::808:808', 'NAT64 even of a public address'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2001::1', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with zone'],
    ['fc00::1', 'unique local'],
    ['fd00:ec2::254', 'AWS metadata (unique local)'],
    ['ff02::1', 'multicast'],
    ['', 'empty'],
    ['localhost', 'a name, not an address'],
    ['256.0.0.1', 'unparsable'],
  ])('%s is not public (%s)', (ip) => expect(isPublicAddress(ip)).toBe(false));
});

// One canary on the dual-stack wildcard catches a connection to ANY address of this machine on PORT:
// 127/8, ::1, 0.0.0.0, ::, and the machine's own interface addresses. Separate listeners on
// 127.0.0.1, 0.0.0.0 … cannot share one port (Linux refuses 0.0.0.0:P once 127.0.0.1:P listens).
let canary: net.Server;
let port: number;
const hits: string[] = [];
// A local HTTPS server that only redirects, for the "redirect to loopback" rows.
let redirector: https.Server;
let redirectorPort: number;
let certDir: string;

beforeAll(async () => {
  canary = net.createServer((socket) => {
    hits.push(socket.localAddress ?? '?');
    socket.destroy(); // the client fails at once (ECONNRESET) instead of waiting for TLS
  });
  await new Promise<void>((resolve) => canary.listen({ host: '::', port: 0, ipv6Only: false }, resolve));
  port = (canary.address() as net.AddressInfo).port;

  certDir = mkdtempSync(path.join(os.tmpdir(), 'ssrf-test-'));
  const [key, cert] = [path.join(certDir, 'key.pem'), path.join(certDir, 'cert.pem')];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=redirector.test',
  ], { stdio: 'ignore' }); // prettier-ignore
  redirector = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const to = req.url === '/to-name' ? `https://localhost:${port}/` : `https://127.0.0.1:${port}/`;
    res.writeHead(302, { location: to }).end();
  });
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  redirectorPort = (redirector.address() as net.AddressInfo).port;
});
afterAll(async () => {
  redirector.closeAllConnections();
  await Promise.all([
    new Promise((resolve) => redirector.close(resolve)),
    new Promise((resolve) => canary.close(resolve)),
  ]);
  rmSync(certDir, { recursive: true, force: true });
});

const strict = createSsrfGuard({ allowPrivateNetworks: false });
const naive = createSsrfGuard({ allowPrivateNetworks: true });

// What a delivery does, minus signing: one POST, no retries, no redirects, a bounded wait.
function post(url: string, guard = strict) {
  return got.post(url, {
    ...guardedGotOptions(guard),
    body: '{}',
    https: { rejectUnauthorized: false },
    retry: { limit: 0 },
    followRedirect: false,
    throwHttpErrors: false,
    timeout: { request: 2000 },
  });
}

async function expectBlocked(request: Promise<unknown>): Promise<SsrfBlocked> {
  const error = await request.then(
    () => undefined,
    (e: unknown) => e,
  );
  // got wraps what the hook or lookup threw; the cause must be the guard's refusal, not a timeout
  // or a refused connection (either would mean a connect was attempted).
  expect((error as Error | undefined)?.cause).toBeInstanceOf(SsrfBlocked);
  expect((error as { code?: string }).code).toBe('ssrf_blocked');
  return (error as Error).cause as SsrfBlocked;
}

// Addresses of this machine's own interfaces (here a documentation and a unique-local address);
// link-local ones are left out because a URL cannot carry their zone.
const ownAddresses = Object.values(os.networkInterfaces())
  .flat()
  .filter((i) => i && !i.internal && !i.address.startsWith('fe80'))
  .map((i) => (i!.family === 'IPv6' ? `[${i!.address}]` : i!.address));
const resolves = (name: string) => dns.lookup(name).then(
  () => true,
  () => false,
); // prettier-ignore
const localhostDot = (await resolves('localhost.')) ? ['localhost.'] : [];
const hostname = (await dns.lookup(os.hostname()).then(
  (a) => !isPublicAddress(a.address),
  () => false,
)) ? [os.hostname()] : []; // prettier-ignore

const hosts = [
  // loopback, in every spelling WHATWG URL and the kernel accept
  '127.0.0.1',
  '127.0.0.2',
  '127.1',
  '2130706433',
  '0x7f000001',
  '0x7f.0.0.1',
  '017700000001',
  '127.0.0.1.',
  '[::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[::7f00:1]',
  '[::ffff:0:7f00:1]',
  '[64:ff9b::7f00:1]',
  '[2002:7f00:1::]',
  '0.0.0.0',
  '0',
  '[::]',
  // names resolving to loopback: the check happens in the lookup, on the address Node connects to
  'localhost',
  'LOCALHOST',
  ...localhostDot,
  ...hostname,
  // metadata services
  '169.254.169.254',
  '[::ffff:a9fe:a9fe]',
  '[fd00:ec2::254]',
  '100.100.100.200',
  // private, CGNAT, link-local, unique-local, multicast, broadcast, benchmarking
  '10.0.0.1',
  '172.16.0.1',
  '192.168.0.1',
  '100.64.0.1',
  '[fe80::1]',
  '[fc00::1]',
  '224.0.0.1',
  '255.255.255.255',
  '198.18.0.1',
  '[2001::1]',
  // this machine's own non-loopback addresses
  ...ownAddresses,
];

describe('WEBHOOK_ALLOW_PRIVATE_NETWORKS=false: every target is refused before connecting', () => {
  test('the table is big enough', () => expect(hosts.length).toBeGreaterThanOrEqual(25));

  test.each(hosts)('https://%s:PORT/', async (host) => {
    const before = hits.length;
    await expectBlocked(post(`https://${host}:${port}/`));
    expect(hits.slice(before)).toEqual([]);
  });

  test('a redirect to loopback is not followed (followRedirect: false)', async () => {
    // The naive guard is only there to reach the local redirector; the hop is what is under test.
    const response = await post(`https://127.0.0.1:${redirectorPort}/`, naive);
    expect(response.statusCode).toBe(302);
    expect(response.headers.location).toBe(`https://127.0.0.1:${port}/`);
    expect(hits).toEqual([]);
  });

  // Were redirects ever followed, each hop still goes through the guard: got runs beforeRequest
  // hooks and the lookup again for the new URL. Only the redirector's made-up name is let through.
  const onlyRedirector: LookupFunction = (name, options, callback) =>
    name === 'redirector.test'
      ? naive.lookup('127.0.0.1', options, callback)
      : strict.lookup(name, options, callback);
  test.each([
    ['/to-literal', '127.0.0.1'],
    ['/to-name', 'localhost'],
  ])('a followed redirect %s to loopback is refused', async (to, refusedHost) => {
    const request = got.post(`https://redirector.test:${redirectorPort}${to}`, {
      ...guardedGotOptions(strict),
      dnsLookup: onlyRedirector,
      https: { rejectUnauthorized: false },
      retry: { limit: 0 },
      followRedirect: true,
      timeout: { request: 2000 },
    });
    // The refusal names the redirect's target, so the first hop did reach the redirector.
    expect((await expectBlocked(request)).host).toBe(refusedHost);
    expect(hits).toEqual([]);
  });

  test('zero connections reached the canary', () => expect(hits).toEqual([]));
});

describe('the naive variant (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true) does reach the canary', () => {
  // Proves the rows above can fail: the same requests without the guard connect.
  test.each(['127.0.0.1', '2130706433', '[::ffff:7f00:1]', '[::1]', 'localhost'])(
    'https://%s:PORT/ connects',
    async (host) => {
      const before = hits.length;
      const error = await post(`https://${host}:${port}/`, naive).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).not.toBeUndefined();
      expect((error as Error).cause).not.toBeInstanceOf(SsrfBlocked);
      await waitFor(() => hits.length > before, { timeoutMs: 2000, what: `a canary connection via ${host}` });
    },
  );

  test('the private-address lookup is plain dns.lookup', async () => {
    const addresses = await new Promise((resolve, reject) =>
      naive.lookup('localhost', { all: true }, (e, a) => (e ? reject(e) : resolve(a))),
    );
    expect(addresses).toContainEqual({ address: '127.0.0.1', family: 4 });
  });
});

describe('strict lookup', () => {
  const lookup = (name: string, options: { all?: boolean }) =>
    new Promise<unknown>((resolve, reject) =>
      strict.lookup(name, options, (e, address, family) => (e ? reject(e) : resolve({ address, family }))),
    );

  test('refuses a name resolving to loopback, in both the single and the all form', async () => {
    await expect(lookup('localhost', {})).rejects.toBeInstanceOf(SsrfBlocked);
    await expect(lookup('localhost', { all: true })).rejects.toBeInstanceOf(SsrfBlocked);
  });

  test('passes resolution errors through unchanged', async () => {
    await expect(lookup('does-not-exist.invalid', {})).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  test('answers a public literal in the form asked for', async () => {
    await expect(lookup('8.8.8.8', {})).resolves.toEqual({ address: '8.8.8.8', family: 4 });
    await expect(lookup('8.8.8.8', { all: true })).resolves.toEqual({
      address: [{ address: '8.8.8.8', family: 4 }],
      family: undefined,
    });
  });

  test('the refusal names host and address only', () => {
    const url = new URL('https://127.0.0.1:1/hook?token=secret');
    let error: unknown;
    try {
      strict.checkUrl(url);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SsrfBlocked);
    expect((error as SsrfBlocked).message).toBe(
      'refusing to connect to 127.0.0.1 (127.0.0.1): not a public address',
    );
    expect(() => strict.checkUrl(new URL('https://example.com/'))).not.toThrow();
    expect(() => strict.checkUrl(new URL('https://[2606:4700:4700::1111]/'))).not.toThrow();
  });
});
