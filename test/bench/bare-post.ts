// The bare baselines' webhook sender (dispatcher-bare.ts, pipeline-bare-consumer.ts): what any
// sender must do per delivery and nothing more, set up as the dispatcher's is (sender.ts): the body
// signed as D7 and D11 say (both header sets, by the signing module the dispatcher uses), over
// keep-alive connections whose TLS context holds the CA once. Three HTTP clients:
//   undici  the dispatcher's own client: undici's Agent as sender.ts makes it (deliveryAgent), with
//           the SSRF guard's lookup; the bare consumer, the throughput floor, sends with it;
//   https   Node's https.request with the agent settings the dispatcher sent with before undici:
//           the old floor, kept for reference;
//   got     got over the same agent, as the dispatcher sent until it dropped got: for reference.
import { readFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Agent, request } from 'node:https';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import got from 'got';
import { createSsrfGuard } from '@trips/broker';
import { signatureHeaders } from '@trips/contracts/webhook-signing';
import { deliveryAgent } from '@trips/dispatcher';

export const BARE_CLIENTS = ['https', 'undici', 'got'] as const;
export type BareClient = (typeof BARE_CLIENTS)[number];

/**
 * What the attempts log keeps of one POST, as an owner's attempt page shows it: the status (0 when
 * it failed without one), the answer's first KiB and headers, and the signature sent.
 */
export interface BareAnswer {
  statusCode: number;
  body: string;
  headers: string;
  signature: string;
}

/** A POST of one signed body. */
export type BarePost = (
  url: string,
  body: string,
  event: { id: string; type: string },
) => Promise<BareAnswer>;

/** The attempts log keeps this much of an answer, and of its headers, as the dispatcher's does. */
const KEPT = 1024;
/** The whole attempt's time, WEBHOOK_TIMEOUT's default. */
const TIMEOUT_MS = 10_000;

const headersFor = (secret: string, body: string, event: { id: string; type: string }) => ({
  'content-type': 'application/json',
  'content-length': String(Buffer.byteLength(body)),
  'user-agent': 'TripService-Webhooks/1',
  'service-event-id': event.id,
  'service-event-type': event.type,
  ...signatureHeaders(event.id, body, Math.floor(Date.now() / 1000), { secrets: [secret] }),
});

/** Raw `name, value` pairs as `name: value` lines, cut at a KiB. */
const headerLines = (raw: readonly string[]) => {
  const lines: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) lines.push(`${raw[i]}: ${raw[i + 1]}`);
  return lines.join('\n').slice(0, KEPT);
};

export function bareSender(options: { caFile: string; secret: string; client?: BareClient }): BarePost {
  const secureContext = createSecureContext({
    ca: [...rootCertificates, readFileSync(options.caFile, 'utf8')],
  });
  const client = options.client ?? 'undici';
  if (client === 'undici') return undiciSender(secureContext, options.secret);
  const agent = new Agent({ keepAlive: true, maxSockets: 256, timeout: 60_000, secureContext });
  return client === 'got' ? gotSender(agent, options.secret) : httpsSender(agent, options.secret);
}

function httpsSender(agent: Agent, secret: string): BarePost {
  return (url, body, event) =>
    new Promise((resolve) => {
      const headers = headersFor(secret, body, event);
      const failed = { statusCode: 0, body: '', headers: '', signature: headers['service-signature'] };
      const post = request(url, { method: 'POST', agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < KEPT) text += chunk;
        });
        res.once('end', () =>
          resolve({
            ...failed,
            statusCode: res.statusCode ?? 0,
            body: text.slice(0, KEPT),
            headers: headerLines(res.rawHeaders),
          }),
        );
        res.once('error', () => resolve(failed));
      });
      post.once('error', () => resolve(failed));
      post.setTimeout(TIMEOUT_MS, () => post.destroy());
      post.end(body);
    });
}

function undiciSender(secureContext: SecureContext, secret: string): BarePost {
  const guard = createSsrfGuard({ allowPrivateNetworks: true });
  const agent = deliveryAgent({ timeoutMs: TIMEOUT_MS, lookup: guard.lookup, secureContext });
  return async (url, body, event) => {
    const target = new URL(url);
    const headers = headersFor(secret, body, event);
    const failed = { statusCode: 0, body: '', headers: '', signature: headers['service-signature'] };
    try {
      const res = await agent.request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: 'POST',
        headers,
        body,
        // The attempt's time as undici's own timers, not sender.ts's abort signal and timer.
        headersTimeout: TIMEOUT_MS,
        bodyTimeout: TIMEOUT_MS,
        responseHeaders: 'raw',
      });
      const text = await res.body.text();
      // As sender.ts does: undici gives the connection back to its pool one turn later, and a POST
      // started before then would open a connection of its own.
      await nextTurn();
      return {
        ...failed,
        statusCode: res.statusCode,
        body: text.slice(0, KEPT),
        headers: headerLines(res.headers as unknown as string[]),
      };
    } catch {
      return failed;
    }
  };
}

function gotSender(agent: Agent, secret: string): BarePost {
  const client = got.extend({
    agent: { https: agent },
    timeout: { request: TIMEOUT_MS },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
  });
  return async (url, body, event) => {
    const headers = headersFor(secret, body, event);
    const failed = { statusCode: 0, body: '', headers: '', signature: headers['service-signature'] };
    try {
      const res = await client.post(url, { body, headers });
      return {
        ...failed,
        statusCode: res.statusCode,
        body: res.body.slice(0, KEPT),
        headers: headerLines(res.rawHeaders),
      };
    } catch {
      return failed;
    }
  };
}
