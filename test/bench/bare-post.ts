// The bare baselines' webhook sender (dispatcher-bare.ts, pipeline-bare-consumer.ts): what any
// sender must do per delivery and nothing more, set up as the dispatcher's is (sender.ts): a
// keep-alive agent with the CA in one TLS context, got without retries or redirects, the body
// signed as D7 says (`t=<unix>,v1=<hex>` of `<t>.<body>`).
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import got from 'got';

/** A POST of one signed body; answers got's response (it never throws on a status). */
export function bareSender(options: { caFile: string; secret: string }) {
  const secureContext = createSecureContext({
    ca: [...rootCertificates, readFileSync(options.caFile, 'utf8')],
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 256, secureContext });
  const client = got.extend({
    agent: { https: agent },
    timeout: { request: 10_000 },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
  });
  return (url: string, body: string, event: { id: string; type: string }) => {
    const t = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', options.secret).update(`${t}.${body}`).digest('hex');
    return client.post(url, {
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'TripService-Webhooks/1',
        'service-event-id': event.id,
        'service-event-type': event.type,
        'service-signature': `t=${t},v1=${signature}`,
      },
    });
  };
}
