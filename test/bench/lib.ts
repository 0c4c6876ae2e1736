// Helpers any benchmark here can share: load runners, exact percentiles, child servers, tables.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

export interface LoadResult {
  /** 2xx responses per second. */
  rps: number;
  /** Latency of every 2xx response in ms, unsorted. */
  latencies: number[];
  /** Non-2xx answers, socket errors and timeouts: any of them means the benchmark is broken. */
  failures: number;
}

export interface LoadOptions {
  url: string;
  seconds: number;
  connections: number;
  headers?: Record<string, string>;
  /** Called once per request, so requests can rotate over many resources. */
  nextPath: () => string;
}

/**
 * Closed-loop load as fast as the server answers. Latencies come from autocannon's per-response
 * event, not its histogram, because that histogram rounds to whole milliseconds.
 */
export async function saturate(opts: LoadOptions & { overallRate?: number }): Promise<LoadResult> {
  const latencies: number[] = [];
  let non2xx = 0;
  const instance = autocannon({
    url: opts.url,
    connections: opts.connections,
    pipelining: 1,
    duration: opts.seconds,
    headers: opts.headers ?? {},
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    requests: [{ setupRequest: (req) => ({ ...req, path: opts.nextPath() }) }],
  });
  instance.on('response', (_client, status, _bytes, ms) => {
    if (status >= 200 && status < 300) latencies.push(ms);
    else non2xx++;
  });
  const result = await instance;
  return {
    rps: latencies.length / result.duration,
    latencies,
    failures: non2xx + result.errors + result.timeouts,
  };
}

/** Nearest-rank percentile of an already sorted sample. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]!;
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** Several rounds of one target as one figure: median req/s, percentiles over every response. */
export function summarize(rounds: readonly LoadResult[]) {
  const all = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    failures: rounds.reduce((sum, r) => sum + r.failures, 0),
  };
}

export const fmt = {
  rps: (n: number) => n.toFixed(0),
  ms: (n: number) => n.toFixed(2),
  ratio: (n: number) => n.toFixed(2),
  /** Microseconds of CPU, whole, with thousands separated as the docs write them: 1,177. */
  us: (n: number) => Math.round(n).toLocaleString('en-US'),
};

/** A table in Markdown, so it reads in a terminal and pastes into docs/benchmarks/<name>.md as is. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

// Cleanup runs once, in reverse order of registration, whether the run ends, fails or is interrupted.
const cleanups: (() => Promise<unknown>)[] = [];
let cleaning: Promise<void> | undefined;

/** Registers a step for `cleanup()`: a database to drop, a child to stop, queues to delete. */
export function onCleanup(step: () => Promise<unknown>): void {
  cleanups.push(step);
}

/** Runs a benchmark's main: a failure is printed and fails the command; cleanup runs either way. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
  // Whatever a failed step left running (a writer's timer, a pool) must not keep the lock's queue waiting.
  process.exit();
}

/**
 * Runs `use`, then at once (not at the run's end) the cleanup steps it registered, newest first: a
 * bench that sets up one system after another stops each before the next.
 */
export async function cleanedUpAfter<T>(use: () => Promise<T>): Promise<T> {
  const mark = cleanups.length;
  try {
    return await use();
  } finally {
    await runCleanups(cleanups.splice(mark));
  }
}

export function cleanup(): Promise<void> {
  return (cleaning ??= runCleanups(cleanups));
}

async function runCleanups(steps: (() => Promise<unknown>)[]): Promise<void> {
  for (const step of steps.reverse()) await step().catch((error) => console.error(error));
}
process.on('SIGINT', () => void cleanup().finally(() => process.exit(130)));

/** A port that was free a moment ago; children get it in their environment. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// Last resort when the parent exits without stopping its children (an uncaught error): an orphan
// server would keep its port, its pool and the test database busy.
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface ChildServer {
  name: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

let clockTicksPerSecond: number | undefined;

/**
 * CPU time a process has used so far, user + system over all its threads, in µs; NaN where
 * /proc is missing. Unlike req/s, CPU per request hardly moves with the rest of the machine's load.
 */
function cpuMicros(pid: number): number {
  try {
    clockTicksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / clockTicksPerSecond;
  } catch {
    return NaN;
  }
}

/** Starts counting a process's CPU time (see cpuMicros); the returned function tells the µs used since. */
export function cpuMeter(pid: number): () => number {
  const before = cpuMicros(pid);
  return () => cpuMicros(pid) - before;
}

/**
 * Starts counting the machine's CPU steal: the share of both cores' time that the hypervisor gave
 * to other guests while this VM wanted it (`/proc/stat`, aggregate `cpu` line). The returned
 * function tells it in percent since the start; NaN where /proc/stat is missing. Every process
 * here stalls while it lasts, whatever its own code, so a round's tail reads against it.
 */
export function stealMeter(): () => number {
  const read = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8')
        .split('\n', 1)[0]!
        .trim()
        .split(/\s+/)
        .slice(1, 9)
        .map(Number);
      return { steal: fields[7]!, total: fields.reduce((sum, value) => sum + value, 0) };
    } catch {
      return { steal: NaN, total: NaN };
    }
  };
  const before = read();
  return () => {
    const now = read();
    return ((now.steal - before.steal) / (now.total - before.total)) * 100;
  };
}

/**
 * Starts counting the CPU time of every process named `command` (as /proc/<pid>/comm has it):
 * `postgres` counts the server's backends, which do the database's share of each request. The
 * returned function tells the µs used since. Per process, so one that exits meanwhile (a pool
 * closing an idle connection) takes only its time in between with it, not all it ever used.
 */
export function commandCpuMeter(command: string): () => number {
  const read = () => {
    const byPid = new Map<number, number>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== command) continue;
      } catch {
        continue; // Gone since the listing.
      }
      const cpu = cpuMicros(Number(entry));
      if (!Number.isNaN(cpu)) byPid.set(Number(entry), cpu);
    }
    return byPid;
  };
  const before = read();
  return () => {
    let total = 0;
    for (const [pid, cpu] of read()) total += cpu - (before.get(pid) ?? 0);
    return total;
  };
}

/**
 * Runs `script` in its own Node process, so the load generator never shares its event loop or
 * its core. Its output goes to a file rather than a pipe: a pipe the busy load generator drains
 * late would block the server's synchronous log writes and distort the very thing measured.
 */
export async function startChild(
  name: string,
  script: string,
  env: Record<string, string>,
  readyPath: string,
  nodeArgs: string[] = [],
): Promise<ChildServer> {
  const port = await freePort();
  const logPath = join(tmpdir(), `bench-${name}-${process.pid}-${port}.log`);
  const out = openSync(logPath, 'w');
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
    children.delete(child);
    rmSync(logPath, { force: true });
  };

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      const log = readFileSync(logPath, 'utf8').slice(-2_000);
      await stop();
      throw new Error(`${name} exited with ${child.exitCode} before it was ready:\n${log}`);
    }
    const ok = await fetch(url + readyPath).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return { name, url, pid: child.pid!, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} was not ready on ${url + readyPath} within 20 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
