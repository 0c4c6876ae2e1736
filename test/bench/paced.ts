// Open-loop load at an even pace, for latency at a given rate (bench:api's paced rounds, the soak).
import { connect, type Socket } from 'node:net';
import type { LoadOptions, LoadResult } from './lib.ts';

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i;
const REQUEST_TIMEOUT_MS = 10_000;

/** A keep-alive connection and the request it is answering, if any. */
interface Connection {
  socket: Socket;
  /** When the request now on this connection was started (or queued); undefined while idle. */
  startedAt: number | undefined;
  /** What has arrived of its response so far. */
  received: Buffer;
}

/**
 * Open-loop load at an even `rate`: requests are started on a 1 ms schedule whether or not earlier
 * ones have answered, and timed from that start, so queueing counts. autocannon's overallRate is
 * not even: each connection sends its whole per-second quota back to back, then waits for the
 * next second, so at half the maximum rate half of every second is full load.
 *
 * Up to `connections` keep-alive connections, opened as needed and reused most recently freed
 * first (as Node's http.Agent does); a request due while all are busy waits for the next free one,
 * and its wait counts. Requests are written and responses read straight on the sockets: Node's
 * http client cost the load generator several times the CPU per request this does, on the same
 * two cores as the server it measures (docs/benchmarks/api.md, "Method", and "Prepared lookups and
 * a lighter paced client", step 2). Responses must carry a Content-Length (ours and bare's do),
 * and anything else fails the request.
 *
 * The first `warmupSeconds` run at the same pace but are not measured: they open the
 * connections, and the first moments of a run (requests queued while the sockets connect) are
 * otherwise enough slow answers to set a 5 to 10 s run's p99 by themselves (docs/benchmarks/api.md,
 * "Method").
 */
export async function paced(
  opts: LoadOptions & { rate: number; warmupSeconds?: number },
): Promise<LoadResult> {
  const { hostname, port } = new URL(opts.url);
  const headerLines = Object.entries({ host: `${hostname}:${port}`, ...opts.headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const latencies: number[] = [];
  let failures = 0;
  let started = 0;
  let inFlight = 0;
  const connections = new Set<Connection>();
  const idle: Connection[] = [];
  /** Start times of requests due while every connection was busy, oldest first. */
  const queued: number[] = [];
  const start = performance.now();
  const measuredFrom = start + (opts.warmupSeconds ?? 0) * 1000;
  const end = measuredFrom + opts.seconds * 1000;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const send = (conn: Connection, startedAt: number) => {
    conn.startedAt = startedAt;
    conn.socket.write(`GET ${opts.nextPath()} HTTP/1.1\r\n${headerLines}\r\n`);
  };
  const settled = () => {
    inFlight--;
    if (inFlight === 0 && performance.now() >= end) finish();
  };
  const free = (conn: Connection) => {
    const next = queued.shift();
    if (next === undefined) idle.push(conn);
    else send(conn, next);
  };
  const drop = (conn: Connection) => {
    if (!connections.delete(conn)) return;
    conn.socket.destroy();
    const at = idle.indexOf(conn);
    if (at >= 0) idle.splice(at, 1);
    if (conn.startedAt !== undefined) {
      conn.startedAt = undefined;
      failures++;
      settled();
    }
    // A request queued behind this connection still needs one.
    const next = queued.shift();
    if (next !== undefined) open(next);
  };
  const read = (conn: Connection, chunk: Buffer) => {
    conn.received = conn.received.length === 0 ? chunk : Buffer.concat([conn.received, chunk]);
    const headerEnd = conn.received.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = conn.received.toString('latin1', 0, headerEnd);
    const length = CONTENT_LENGTH.exec(head);
    if (!length || conn.startedAt === undefined) return drop(conn);
    const size = headerEnd + HEADER_END.length + Number(length[1]);
    if (conn.received.length < size) return;
    if (conn.received.length > size) return drop(conn);
    const status = Number(head.slice(9, 12));
    const startedAt = conn.startedAt;
    conn.startedAt = undefined;
    conn.received = Buffer.alloc(0);
    if (status < 200 || status >= 300) failures++;
    else if (startedAt >= measuredFrom) latencies.push(performance.now() - startedAt);
    settled();
    free(conn);
  };
  const open = (startedAt: number) => {
    const conn: Connection = {
      socket: connect(Number(port), hostname),
      startedAt: undefined,
      received: Buffer.alloc(0),
    };
    connections.add(conn);
    conn.socket.setNoDelay(true);
    conn.socket.setTimeout(REQUEST_TIMEOUT_MS, () => drop(conn));
    conn.socket.on('data', (chunk: Buffer) => read(conn, chunk));
    conn.socket.on('error', () => drop(conn));
    conn.socket.on('close', () => drop(conn));
    send(conn, startedAt);
  };
  const begin = (startedAt: number) => {
    inFlight++;
    const conn = idle.pop();
    if (conn) send(conn, startedAt);
    else if (connections.size < opts.connections) open(startedAt);
    else queued.push(startedAt);
  };
  const tick = () => {
    const now = Math.min(performance.now(), end);
    for (const due = Math.floor(((now - start) / 1000) * opts.rate); started < due; started++) {
      begin(performance.now());
    }
    if (now < end) setTimeout(tick, 1);
    else if (inFlight === 0) finish();
  };
  tick();
  await finished;
  for (const conn of [...connections]) {
    connections.delete(conn);
    conn.socket.destroy();
  }
  return { rps: latencies.length / opts.seconds, latencies, failures };
}
