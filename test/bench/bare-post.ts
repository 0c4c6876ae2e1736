// The bare baselines' webhook sender (dispatcher-bare.ts, pipeline-bare-consumer.ts): what any
// sender must do per delivery and nothing more, set up as the dispatcher's is (sender.ts): the body
// signed as D7 and D11 say (both header sets, by the signing module the dispatcher uses), over
// keep-alive connections whose TLS context holds the CA once. Three HTTP clients:
//   https   Node's https.request with the dispatcher's agent settings: the floor, since the
//           dispatcher sends with exactly this;
//   undici  undici's Pool (the client behind Node's fetch), one per origin, with the SSRF guard's
//           lookup given at connect as the dispatcher gives it to https: the candidate;
//   got     got over the same agent, as the dispatcher sent until it dropped got: for reference.
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import got from 'got';
import { Pool } from 'undici';
import { createSsrfGuard } from '@trips/broker';
import { signatureHeaders } from '@trips/contracts/webhook-signing';

export const BARE_CLIENTS = ['https', 'undici', 'got'] as const;
export type BareClient = (typeof BARE_CLIENTS)[number];

/** A POST of one signed body; answers its status (0 when it failed without one) and its body's first KiB. */
export type BarePost = (
  url: string,
  body: string,
  event: { id: string; type: string },
) => Promise<{ statusCode: number; body: string }>;

const FAILED = { statusCode: 0, body: '' };
/** The attempts log keeps this much of an answer, as the dispatcher's does. */
const KEPT = 1024;

const headersFor = (secret: string, body: string, event: { id: string; type: string }) => ({
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(body)),
  'user-agent': 'TripService-Webhooks/1',
  'service-event-id': event.id,
  'service-event-type': event.type,
  ...signatureHeaders(event.id, body, Math.floor(Date.now() / 1000), { secrets: [secret] }),
});

export function bareSender(options: { caFile: string; secret: string; client?: BareClient }): BarePost {
  const secureContext = createSecureContext({
    ca: [...rootCertificates, readFileSync(options.caFile, 'utf8')],
  });
  const client = options.client ?? 'https';
  if (client === 'undici') return undiciSender(secureContext, options.secret);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, timeout: 60_000, secureContext });
  return client === 'got' ? gotSender(agent, options.secret) : httpsSender(agent, options.secret);
}

function httpsSender(agent: Agent, secret: string): BarePost {
  return (url, body, event) =>
    new Promise((resolve) => {
      const post = request(
        url,
        { method: 'POST', agent, headers: headersFor(secret, body, event) },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (text.length < KEPT) text += chunk;
          });
          res.once('end', () => resolve({ statusCode: res.statusCode ?? 0, body: text.slice(0, KEPT) }));
          res.once('error', () => resolve(FAILED));
        },
      );
      post.once('error', () => resolve(FAILED));
      post.setTimeout(10_000, () => post.destroy());
      post.end(body);
    });
}

function undiciSender(secureContext: SecureContext, secret: string): BarePost {
  const guard = createSsrfGuard({ allowPrivateNetworks: true });
  const pools = new Map<string, Pool>();
  return async (url, body, event) => {
    const target = new URL(url);
    let pool = pools.get(target.origin);
    if (!pool) {
      pool = new Pool(target.origin, {
        connections: 256,
        pipelining: 1,
        connect: { secureContext, lookup: guard.lookup },
        headersTimeout: 10_000,
        bodyTimeout: 10_000,
      });
      pools.set(target.origin, pool);
    }
    try {
      const res = await pool.request({
        method: 'POST',
        path: target.pathname + target.search,
        headers: headersFor(secret, body, event),
        body,
      });
      const text = await res.body.text();
      return { statusCode: res.statusCode, body: text.slice(0, KEPT) };
    } catch {
      return FAILED;
    }
  };
}

function gotSender(agent: Agent, secret: string): BarePost {
  const client = got.extend({
    agent: { https: agent },
    timeout: { request: 10_000 },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
  });
  return async (url, body, event) => {
    try {
      const res = await client.post(url, { body, headers: headersFor(secret, body, event) });
      return { statusCode: res.statusCode, body: res.body.slice(0, KEPT) };
    } catch {
      return FAILED;
    }
  };
}
