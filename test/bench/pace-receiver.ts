// The webhook receiver of `pnpm bench:pace`, in a process of its own: a small server behind a rate
// limiter, as agencies' endpoints often are. One HTTPS server; the first segment of the path says
// how it limits:
//   /bucket/…  a token bucket: BENCH_PACE_RATE a second, holding a second's worth (nginx's
//              limit_req with a burst, most API gateways); the rest 429 with Retry-After: 1
//   /window/…  a fixed window: BENCH_PACE_RATE in each calendar second, the rest 429 with
//              Retry-After: 1 (express-rate-limit's default)
//   /open/…    200 always (the owner's own rate limit is then the only one)
// Driven over the IPC channel:
//   parent → { id, op: 'arrivals' }  ← { id, arrivals: [path, tripId, at, status][] } (since the last call)
// `at` is epoch milliseconds with sub-millisecond precision, comparable with the parent's clock.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';

const now = () => performance.timeOrigin + performance.now();
const RATE = Number(process.env.BENCH_PACE_RATE ?? 100);

let arrivals: [string, string, number, number][] = [];

/** A token bucket of RATE a second holding RATE tokens, full at the start. */
const bucket = { tokens: RATE, at: now() };
function bucketTakes(at: number): boolean {
  bucket.tokens = Math.min(RATE, bucket.tokens + ((at - bucket.at) * RATE) / 1000);
  bucket.at = at;
  if (bucket.tokens < 1) return false;
  bucket.tokens--;
  return true;
}

/** RATE requests in each calendar second. */
const window = { second: 0, count: 0 };
function windowTakes(at: number): boolean {
  const second = Math.floor(at / 1000);
  if (second !== window.second) Object.assign(window, { second, count: 0 });
  return ++window.count <= RATE;
}

function status(path: string, at: number): number {
  const mode = path.split('/')[1];
  if (mode === 'bucket') return bucketTakes(at) ? 200 : 429;
  if (mode === 'window') return windowTakes(at) ? 200 : 429;
  return 200;
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = now();
    const path = req.url ?? '/';
    const code = status(path, at);
    let tripId = '';
    try {
      tripId =
        (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { related_object?: { id?: string } })
          .related_object?.id ?? '';
    } catch {
      // Not an event: counted with no trip.
    }
    arrivals.push([path, tripId, at, code]);
    res.writeHead(code, code === 429 ? { 'retry-after': '1' } : {});
    res.end(code === 429 ? 'slow down' : 'ok');
  });
}

const server = createServer({ key: process.env.BENCH_TLS_KEY, cert: process.env.BENCH_TLS_CERT }, handle);
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.send!({ ready: true, port: (server.address() as AddressInfo).port });
});
process.on('message', (message: { id: number; op: string }) => {
  if (message.op !== 'arrivals') return;
  const taken = arrivals;
  arrivals = [];
  process.send!({ id: message.id, arrivals: taken });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.on('disconnect', () => process.exit(0));
