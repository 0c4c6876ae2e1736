// paced() on a thread of its own, for bench:api. A worker thread has its own V8 heap, so the
// collections of the parent's (autocannon's rounds, the database client, every round's latencies)
// no longer stop the client that times the requests. Measured: each of the parent's mark-compacts
// lined up with a burst of slow answers in the server's round, whichever the server
// (docs/benchmarks/api.md, "The load generator's own pauses"). The soak runs it in a child process.
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import type { LoadResult } from './lib.ts';
import { paced } from './paced.ts';

export interface PacedJob {
  url: string;
  headers: Record<string, string>;
  /** Request paths, used in turn, carrying on from the last job. */
  paths: string[];
  rate: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

interface PacedReply {
  rps: number;
  /** Every 2xx response's latency in ms, moved (not copied) to the parent. */
  latencies: Float64Array;
  failures: number;
}

/** One load-generator thread, running paced() jobs one at a time. */
export class PacedThread {
  private readonly worker = new Worker(new URL(import.meta.url));

  run(job: PacedJob): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const failed = (error: Error) => reject(error);
      this.worker.once('error', failed);
      this.worker.once('message', (reply: PacedReply) => {
        this.worker.off('error', failed);
        resolve({ rps: reply.rps, latencies: Array.from(reply.latencies), failures: reply.failures });
      });
      this.worker.postMessage(job);
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

if (!isMainThread) {
  let next = 0;
  parentPort!.on('message', (job: PacedJob) => {
    void paced({ ...job, nextPath: () => job.paths[next++ % job.paths.length]! }).then((result) => {
      const latencies = Float64Array.from(result.latencies);
      const reply: PacedReply = { rps: result.rps, latencies, failures: result.failures };
      parentPort!.postMessage(reply, [latencies.buffer]);
    });
  });
}
