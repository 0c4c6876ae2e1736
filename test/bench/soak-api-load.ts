// The API load of `pnpm bench:soak`, in its own process: each request is started and timed on an
// event loop that does nothing else, while the parent writes the events and keeps the books. One
// paced() run per minute, back to back, so the parent can print each minute as it ends. IPC:
//   child  → { ready: true }
//   parent → { op: 'run', url, headers, paths, rate, minutes, warmupSeconds? }
//   child  → { minute, rps, p50, p95, p99, failures }   after each minute
//   child  → { done: true, rps, p50, p95, p99, failures } over every minute
// A parent may send runs one after another (bench:capacity sends one per step).
import { percentile } from './lib.ts';
import { paced } from './paced.ts';

interface Run {
  op: 'run';
  url: string;
  headers: Record<string, string>;
  /** Request paths, used in turn. */
  paths: string[];
  rate: number;
  minutes: number;
  /** Unmeasured seconds at the same pace before the first minute's measured 59 s (1 by default). */
  warmupSeconds?: number;
}

/** As bench:api's paced rounds, so "half the maximum" means the same load. */
const CONNECTIONS = 20;
/**
 * Each minute's run opens its connections anew; its first second is at the same pace but not
 * measured (see paced()), so 59 s of every minute are.
 */
const WARMUP_SECONDS = 1;
const MEASURED_SECONDS = 60 - WARMUP_SECONDS;

const summary = (sorted: ArrayLike<number>, seconds: number, failures: number) => {
  const at = (p: number) => percentile(sorted as readonly number[], p);
  return { rps: sorted.length / seconds, p50: at(50), p95: at(95), p99: at(99), failures };
};

process.on('message', (run: Run) => {
  void (async () => {
    let next = 0;
    const nextPath = () => run.paths[next++ % run.paths.length]!;
    const minutes: Float64Array[] = [];
    let failures = 0;
    for (let minute = 1; minute <= run.minutes; minute++) {
      const result = await paced({
        url: run.url,
        headers: run.headers,
        nextPath,
        rate: run.rate,
        connections: CONNECTIONS,
        seconds: MEASURED_SECONDS,
        warmupSeconds: minute === 1 ? (run.warmupSeconds ?? WARMUP_SECONDS) : WARMUP_SECONDS,
      });
      // A typed array sorts numerically and holds ten minutes at 2 500 req/s in 12 MB.
      const sorted = Float64Array.from(result.latencies).sort();
      minutes.push(sorted);
      failures += result.failures;
      process.send!({ minute, ...summary(sorted, MEASURED_SECONDS, result.failures) });
    }
    const all = new Float64Array(minutes.reduce((n, m) => n + m.length, 0));
    minutes.reduce((offset, m) => (all.set(m, offset), offset + m.length), 0);
    process.send!({ done: true, ...summary(all.sort(), run.minutes * MEASURED_SECONDS, failures) });
  })();
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send!({ ready: true });
