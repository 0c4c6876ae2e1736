import { spawn, type ChildProcess } from 'node:child_process';

/** A service started as its own Node process, as its image starts it, with everything it prints. */
export interface ServiceProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved as they arrived. */
  readonly output: string;
  /** undefined while it runs; then its exit code (null when a signal ended it). */
  readonly exitCode: number | null | undefined;
}

/** Starts `node <main>` with the test's environment plus `env`, capturing its output. */
export function startServiceProcess(main: string, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exitCode: number | null | undefined;
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.on('exit', (code) => (exitCode = code));
  return {
    child,
    get output() {
      return output;
    },
    get exitCode() {
      return exitCode;
    },
  };
}
