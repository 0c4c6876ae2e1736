// The baseline of `pnpm bench:dispatcher`, in its own process like the dispatcher it is compared
// with: the least a webhook sender must do per delivery, with nothing in between. BENCH_CONCURRENCY
// loops, each a signed `got.post` of an event record (same shape and size as the dispatcher's
// bodies, same headers, HMAC-SHA256 signature as in D7) over a shared keep-alive agent, to
// BENCH_TARGET_URL. No queue, no database, no SSRF guard, no breaker. Driven over IPC:
//   parent → { op: 'start' } … { op: 'stop' }  ← { stopped: true, sent, failures }
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import got from 'got';
import { eventRecord } from '@trips/contracts';

const url = process.env.BENCH_TARGET_URL!;
const concurrency = Number(process.env.BENCH_CONCURRENCY);
const secret = process.env.BENCH_SECRET!;
const ca = readFileSync(process.env.WEBHOOK_CA_FILE!, 'utf8');

// The same TLS setup as the dispatcher's (sender.ts): the CA in one context on the agent.
const secureContext = createSecureContext({ ca: [...rootCertificates, ca] });
const agent = new Agent({ keepAlive: true, maxSockets: 256, secureContext });
const client = got.extend({
  agent: { https: agent },
  timeout: { request: 10_000 },
  retry: { limit: 0 },
  throwHttpErrors: false,
  followRedirect: false,
});

let running = false;
let sent = 0;
let failures = 0;
let counter = 0;

async function loop(): Promise<void> {
  while (running) {
    const n = counter++;
    const event = eventRecord({
      id: `evt_bare${process.pid}x${n}`,
      type: 'trip.created',
      object_type: 'trip',
      object_id: `trp_bare${n}`,
      data: {},
      created_at: new Date(),
    });
    const body = JSON.stringify(event);
    const t = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    const response = await client
      .post(url, {
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'TripService-Webhooks/1',
          'service-event-id': event.id,
          'service-event-type': event.type,
          'service-signature': `t=${t},v1=${signature}`,
        },
      })
      .catch(() => undefined);
    sent++;
    if (!response || response.statusCode < 200 || response.statusCode >= 300) failures++;
  }
}

let loops: Promise<void>[] = [];
process.on('message', async (command: { op: 'start' | 'stop' }) => {
  if (command.op === 'start' && !running) {
    running = true;
    sent = 0;
    failures = 0;
    loops = Array.from({ length: concurrency }, () => loop());
  } else if (command.op === 'stop') {
    running = false;
    await Promise.all(loops);
    process.send!({ stopped: true, sent, failures });
  }
});
// Exits (rather than dies) on SIGTERM, so a --cpu-prof profile is written.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send!({ ready: true });
