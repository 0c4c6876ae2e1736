// The SSRF guard (D7): a webhook URL is typed by an agency, so a delivery must never become a way
// to reach this cluster's own network (databases, the cloud metadata service, admin ports).
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

// IANA's global unicast block. Everything outside it (::/8 with its IPv4-compatible forms like
// ::7f00:1, fc00::/7, fe80::/10, ff00::/8) is not a public destination, so the IPv6 check is an
// allow-list first and only then asks ipaddr.js for special ranges inside it.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * True only for an address on the public internet. ipaddr.js names every special-purpose range;
 * only the leftover 'unicast' is public. That denies 0/8, 127/8, 10/8, 172.16/12, 192.168/16,
 * 100.64/10 (CGNAT, also Alibaba's 100.100.100.200 metadata), 169.254/16 (link-local, also the
 * 169.254.169.254 metadata service), 198.18/15, documentation, multicast, broadcast, 240/4, ::,
 * ::1, fc00::/7 (also AWS's fd00:ec2::254 metadata) and fe80::/10.
 * Ranges that embed an IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32) are
 * denied outright rather than unwrapped: a gateway would carry the packet to whatever IPv4 address
 * is inside, and no webhook receiver needs to be addressed that way. IPv4-mapped addresses
 * (::ffff:a.b.c.d) are unwrapped, because the kernel connects them to the IPv4 address itself.
 * Anything unparsable is denied.
 */
export function isPublicAddress(ip: string): boolean {
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.process(ip); // parse, then unwrap ::ffff:a.b.c.d to IPv4
  } catch {
    return false;
  }
  if (address.kind() === 'ipv6' && !address.match(GLOBAL_UNICAST_V6)) return false;
  return address.range() === 'unicast';
}

/**
 * Whether a URL's host (`url.hostname`) is one a delivery can name: an IP literal, or a DNS name
 * whose labels are 1 to 63 characters, with at most the root's one dot at the end. WHATWG URL also
 * takes `localhost..`, `.a` and `a..b`, which are no DNS names at all; a check that strips the
 * root's dot would read `localhost..` as some name other than localhost, and a resolver may still
 * read it as localhost. So such a host is refused outright, at registration and at delivery.
 */
export function isDeliverableHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (net.isIP(host)) return true;
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  return name.length <= 253 && name.split('.').every((label) => label.length >= 1 && label.length <= 63);
}

/**
 * What kind of non-public address `ip` is, in words for a refusal: 'loopback', 'private',
 * 'link-local' or 'non-public' (the other special ranges).
 */
export function addressKind(ip: string): 'loopback' | 'private' | 'link-local' | 'non-public' {
  let range: string;
  try {
    range = ipaddr.process(ip).range();
  } catch {
    return 'non-public';
  }
  if (range === 'loopback' || range === 'unspecified') return 'loopback';
  if (range === 'private' || range === 'uniqueLocal') return 'private';
  if (range === 'linkLocal') return 'link-local';
  return 'non-public';
}

/**
 * A delivery refused because its destination is not public. `code` is how the dispatcher's sender
 * tells it from other failures: Node's request fails with the error its `lookup` gave.
 */
export class SsrfBlocked extends Error {
  readonly code = 'ssrf_blocked';
  readonly host: string;
  readonly address: string;
  constructor(host: string, address: string) {
    // Host and address only: the URL's path or query could carry a receiver's token.
    super(`refusing to connect to ${host} (${address}): not a public address`);
    this.name = 'SsrfBlocked';
    this.host = host;
    this.address = address;
  }
}

export interface SsrfGuard {
  /** Throws SsrfBlocked for an IP-literal host that is not public; names are left to `lookup`. */
  checkUrl(url: URL): void;
  /** dns.lookup, but failing with SsrfBlocked when any resolved address is not public. */
  lookup: LookupFunction;
}

export function createSsrfGuard({ allowPrivateNetworks }: { allowPrivateNetworks: boolean }): SsrfGuard {
  // WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: development and tests deliver to receivers on this machine.
  if (allowPrivateNetworks) return { checkUrl: () => {}, lookup: dns.lookup as LookupFunction };

  return {
    checkUrl(url) {
      // net.connect skips `lookup` for IP literals, so they are checked here. WHATWG URL has
      // already turned 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1; IPv6 keeps brackets.
      // net.isIP is the very test Node uses to decide "literal, no lookup", so the two agree.
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      if (net.isIP(host) && !isPublicAddress(host)) throw new SsrfBlocked(host, host);
    },
    // The check runs on the addresses Node is about to connect to, in the same lookup, so a name
    // whose DNS answer changes between a check and the connect (DNS rebinding) cannot slip past.
    lookup(hostname, options, callback) {
      // Always ask for every address: Node's happy eyeballs (autoSelectFamily) may try any of them.
      dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
        if (error) return callback(error, '');
        // Strict: one non-public address refuses the whole name. Filtering it out would make the
        // outcome depend on which address Node happens to try, and a public name that also
        // publishes 127.0.0.1 is misconfigured or probing; a clear refusal is easier to explain.
        const bad = addresses.find((a) => !isPublicAddress(a.address));
        if (bad) return callback(new SsrfBlocked(hostname, bad.address), '');
        if (options.all) return callback(null, addresses);
        const first = addresses[0];
        if (!first)
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        callback(null, first.address, first.family);
      });
    },
  };
}
