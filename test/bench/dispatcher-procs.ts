// Child processes of `pnpm bench:dispatcher`: the services under test (dispatcher, recorder), the
// receiver and the bare sender, each in its own Node process so none shares the event loop of
// another. Output goes to a file, never a pipe the busy parent might drain late and so block the
// child's log writes.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { queueNames, type Topology } from '@trips/broker';
import { deleteAmqpObjects } from '@trips/testkit';

// Last resort when the bench dies without stopping its children: an orphan would keep its
// connections, queues and the test database busy.
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface Child {
  name: string;
  process: ChildProcess;
  /** The child's output so far (stdout and stderr). */
  log(): string;
  /** Sends a command and resolves with the answer carrying the same id (receiver protocol). */
  request<T>(command: object): Promise<T>;
  /** Resolves with the next IPC message matching `test`. */
  next<T>(test: (message: Record<string, unknown>) => boolean): Promise<T>;
  stop(): Promise<void>;
}

let nextId = 1;

/** `nodeArgs` go before the script: `--cpu-prof`, say (the child must exit, not die, on SIGTERM). */
export function startChild(
  name: string,
  script: string,
  env: Record<string, string>,
  ipc = false,
  nodeArgs: string[] = [],
): Child {
  const logPath = join(tmpdir(), `bench-dispatcher-${name}-${process.pid}.log`);
  const out = openSync(logPath, 'w');
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env },
    stdio: ipc ? ['ignore', out, out, 'ipc'] : ['ignore', out, out],
  });
  closeSync(out);
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waiters = new Set<{ test: (m: Record<string, unknown>) => boolean; resolve: (m: unknown) => void }>();
  child.on('message', (message: Record<string, unknown>) => {
    for (const waiter of waiters) {
      if (waiter.test(message)) {
        waiters.delete(waiter);
        waiter.resolve(message);
        return;
      }
    }
  });
  const next = <T>(test: (message: Record<string, unknown>) => boolean) =>
    new Promise<T>((resolve, reject) => {
      waiters.add({ test, resolve: resolve as (m: unknown) => void });
      void exited.then(() => reject(new Error(`${name} exited:\n${log().slice(-2_000)}`)));
    });
  const log = () => readFileSync(logPath, 'utf8');
  return {
    name,
    process: child,
    log,
    next,
    request: <T>(command: object) => {
      const id = nextId++;
      const answer = next<T>((m) => m.id === id);
      child.send({ ...command, id });
      return answer;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      children.delete(child);
      rmSync(logPath, { force: true });
    },
  };
}

/** Waits until `url` answers 2xx (a service's /readyz), failing early if the child exits. */
export async function waitReady(child: Child, url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.process.exitCode !== null) {
      throw new Error(`${child.name} exited with ${child.process.exitCode}:\n${child.log().slice(-2_000)}`);
    }
    const ok = await fetch(url).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${child.name} not ready on ${url} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Log lines at pino's warn level or above (40+): none are expected while measuring. */
export function warnings(log: string): string[] {
  return log.split('\n').filter((line) => /"level":(4|5|6)\d/.test(line));
}

// ---- CPU accounting, from /proc (Linux) ----

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux this runs on

/** CPU seconds (user + system, all threads) a process has used; 0 once it is gone. */
function cpuOfPid(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: utime is the
    // 14th field of the line, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** Pids of the processes whose command line contains `text` (e.g. a database name). */
export function pidsMatching(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => cmdline(pid).includes(text));
}

export type CpuSample = Record<string, Map<number, number>>;

/** CPU seconds used so far by every process of each group (group → its pids, found anew each call). */
export function sampleCpu(groups: Record<string, () => number[]>): CpuSample {
  return Object.fromEntries(
    Object.entries(groups).map(([name, pids]) => [name, new Map(pids().map((pid) => [pid, cpuOfPid(pid)]))]),
  );
}

/** CPU seconds each group used between two samples; a process that started in between counts whole. */
export function cpuBetween(a: CpuSample, b: CpuSample): Record<string, number> {
  return Object.fromEntries(
    Object.entries(b).map(([name, pids]) => {
      let seconds = 0;
      for (const [pid, cpu] of pids) seconds += cpu - (a[name]?.get(pid) ?? 0);
      return [name, seconds];
    }),
  );
}

// ---- A variant's broker objects ----

/**
 * Deletes a variant's queues and exchanges: those the dispatcher's topology names, and (where
 * rabbitmqctl is at hand) any other carrying the prefix, so a queue added to the topology later
 * is not left behind.
 */
export async function deleteAmqp(prefix: string, names: Topology): Promise<void> {
  const listed = async (what: 'list_queues' | 'list_exchanges') => {
    try {
      const { stdout } = await promisify(execFile)('rabbitmqctl', ['-q', what, 'name'], { timeout: 60_000 });
      return stdout.split('\n').filter((name) => name.startsWith(prefix));
    } catch {
      return [];
    }
  };
  await deleteAmqpObjects({
    queues: [...new Set([...queueNames(names), ...(await listed('list_queues'))])],
    exchanges: [
      ...new Set([names.eventsExchange, names.expressExchange, ...(await listed('list_exchanges'))]),
    ],
  });
}
