// The bare loops of `pnpm bench:dispatcher`'s throughput part, in their own process like the
// dispatcher they are printed beside: what a webhook sender's client alone costs per delivery, with
// nothing in between. BENCH_CONCURRENCY loops, each a signed POST of an event record (same shape
// and size as the dispatcher's bodies, same headers, both signature header sets as in D7 and D11)
// with BENCH_BARE_CLIENT (bare-post.ts: https, the old floor; undici, the dispatcher's client; got)
// to BENCH_TARGET_URL. No queue, no database, no breaker: the floor for the same work as ours is the
// bare consumer (pipeline-bare-consumer.ts). Driven over IPC:
//   parent → { op: 'start' } … { op: 'stop' }  ← { stopped: true, sent, failures }
import { eventRecord } from '@trips/contracts';
import { BARE_CLIENTS, bareSender, type BareClient } from './bare-post.ts';

const url = process.env.BENCH_TARGET_URL!;
const concurrency = Number(process.env.BENCH_CONCURRENCY);
const client = (process.env.BENCH_BARE_CLIENT ?? 'https') as BareClient;
if (!BARE_CLIENTS.includes(client))
  throw new Error(`BENCH_BARE_CLIENT ${client}: not one of ${BARE_CLIENTS.join(', ')}`);
const post = bareSender({ caFile: process.env.WEBHOOK_CA_FILE!, secret: process.env.BENCH_SECRET!, client });

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
    const { statusCode } = await post(url, JSON.stringify(event), event);
    sent++;
    if (statusCode < 200 || statusCode >= 300) failures++;
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
