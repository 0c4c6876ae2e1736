// The system under test as separate processes, two replicas of each service, and the fault the
// system tests inject on them: kill -9 of a replica. Processes are started with the benchmark's
// startChild (output to a file, never a pipe the busy test might drain late). A test that restarts
// RabbitMQ or Postgres restarts a node or server of its own (@trips/testkit's LocalRabbitCluster,
// postgres-replica.ts), never the machine's: other runs share those.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChild, waitReady, type Child } from '../bench/dispatcher-procs.ts';

export type ServiceName = 'api' | 'recorder' | 'dispatcher';

const MAIN: Record<ServiceName, string> = {
  api: fileURLToPath(new URL('../../services/api/src/main.ts', import.meta.url)),
  recorder: fileURLToPath(new URL('../../services/recorder/src/main.ts', import.meta.url)),
  dispatcher: fileURLToPath(new URL('../../services/dispatcher/src/main.ts', import.meta.url)),
};

/** A free loopback port: each replica keeps its ports across restarts, as a pod keeps its address. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Exit {
  code: number | null;
  signal: string | null;
}

interface Incarnation {
  child: Child;
  /** Its output once it exited (the file is removed then). */
  log?: string;
  exit?: Exit;
  /** Exited without being told to (neither our kill -9 nor our SIGTERM). */
  unexpected?: boolean;
}

/** One replica of a service: the same settings and ports through every restart. */
export class Replica {
  readonly name: string;
  readonly service: ServiceName;
  /** Where /readyz answers: the API's own port, the others' health port. */
  readonly readyUrl: string;
  private readonly env: Record<string, string>;
  private readonly incarnations: Incarnation[] = [];
  private expectingExit = false;

  constructor(service: ServiceName, name: string, env: Record<string, string>, healthPort: number) {
    this.service = service;
    this.name = name;
    this.env = env;
    this.readyUrl = `http://127.0.0.1:${healthPort}/readyz`;
  }

  private get current(): Incarnation | undefined {
    const last = this.incarnations.at(-1);
    return last && !last.exit ? last : undefined;
  }

  async start(timeoutMs = 30_000): Promise<void> {
    const incarnation: Incarnation = {
      child: startChild(`system-${this.name}-${this.incarnations.length}`, MAIN[this.service], this.env),
    };
    this.incarnations.push(incarnation);
    this.expectingExit = false;
    incarnation.child.process.once('exit', (code, signal) => {
      incarnation.log = incarnation.child.log();
      incarnation.exit = { code, signal };
      incarnation.unexpected = !this.expectingExit;
    });
    await waitReady(incarnation.child, this.readyUrl, timeoutMs);
  }

  private async end(signal: 'SIGKILL' | 'SIGTERM', deadlineMs: number): Promise<Exit | undefined> {
    const incarnation = this.current;
    if (!incarnation) return undefined;
    this.expectingExit = true;
    const exited = once(incarnation.child.process, 'exit');
    incarnation.child.process.kill(signal);
    const timer = setTimeout(() => incarnation.child.process.kill('SIGKILL'), deadlineMs);
    await exited;
    clearTimeout(timer);
    await incarnation.child.stop(); // removes the output file; the exit handler kept its text
    return incarnation.exit;
  }

  /** kill -9, then the same replica again (a pod's container restarted). */
  async crashAndRestart(): Promise<void> {
    await this.end('SIGKILL', 5_000);
    await this.start();
  }

  /** SIGTERM, as Kubernetes stops a pod; answers how it exited. */
  async stop(deadlineMs = 15_000): Promise<Exit | undefined> {
    return this.end('SIGTERM', deadlineMs);
  }

  /** The output of every incarnation so far, the running one included. */
  logs(): string[] {
    return this.incarnations.map((i) => i.log ?? i.child.log());
  }

  /** Incarnations that exited by themselves (a crash the test did not cause), with what killed them. */
  unexpectedExits(): (Exit & { cause: string })[] {
    return this.incarnations
      .filter((i) => i.unexpected)
      .map((i) => ({ ...i.exit!, cause: crashCause(i.log ?? '') }));
  }

  /** Writes every incarnation's output to `dir` (kept when the test fails). */
  saveLogs(dir: string): void {
    this.logs().forEach((text, n) => writeFileSync(join(dir, `${this.name}.${n}.log`), text));
  }

  /** Last resort (afterAll): every incarnation gone and its output file removed. */
  async cleanup(): Promise<void> {
    this.expectingExit = true;
    for (const incarnation of this.incarnations) await incarnation.child.stop();
  }

  get restarts(): number {
    return this.incarnations.length - 1;
  }
}

/** The error an uncaught exception printed after the last log line, or the last log line. */
function crashCause(log: string): string {
  const lines = log.trim().split('\n');
  const lastLogLine = lines.findLastIndex((line) => line.startsWith('{'));
  const error = lines.slice(lastLogLine + 1).find((line) => /^\w*(Error|error)\b/.test(line));
  return error ?? lines[lastLogLine]?.slice(0, 300) ?? '';
}

/** Starts every replica, in the order given (the dispatchers declare the queues, so they go first). */
export async function startAll(replicas: Replica[]): Promise<void> {
  for (const replica of replicas) await replica.start();
}
