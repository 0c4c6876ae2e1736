import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { run } from '../src/program.ts';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs tripctl in this process with its own env; output is captured, nothing reaches the terminal. */
export async function cli(argv: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env,
  });
  return { code, stdout, stderr };
}

/** The --json document of a command that must have succeeded; a failure shows its stderr. */
export async function cliJson<T = Record<string, unknown>>(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<T> {
  const result = await cli([...argv, '--json'], env);
  if (result.code !== 0) throw new Error(`tripctl ${argv.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const mainTs = fileURLToPath(new URL('../src/main.ts', import.meta.url));

export interface ProcessResult extends CliResult {
  /** Set when the process had to be killed: it did not end by itself within the timeout. */
  signal: NodeJS.Signals | null;
  /**
   * From its last output to its exit. A pool left open keeps the process alive for pg's idle
   * timeout (10 s) after the work is done; measured from the output, this does not count a slow
   * start on a busy machine.
   */
  lingeredMs: number;
}

/**
 * Runs the real `node packages/tripctl/src/main.ts` as the README tells operators to. Node is
 * process.execPath (Node 24 under jest), so type stripping is the same as in production.
 */
export function spawnCli(
  argv: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
): Promise<ProcessResult> {
  return new Promise((resolve) => {
    let lastOutput = Date.now();
    const child = execFile(
      process.execPath,
      [mainTs, ...argv],
      {
        cwd: repoRoot,
        env: { PATH: process.env.PATH ?? '', ...env },
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
      },
      (error, stdout, stderr) => {
        const failed = error as (Error & { code?: number | string; signal?: NodeJS.Signals }) | null;
        resolve({
          code: typeof failed?.code === 'number' ? failed.code : failed ? -1 : 0,
          signal: failed?.signal ?? null,
          stdout,
          stderr,
          lingeredMs: Date.now() - lastOutput,
        });
      },
    );
    for (const stream of [child.stdout, child.stderr]) stream?.on('data', () => (lastOutput = Date.now()));
  });
}

/** Whatever went wrong, a user never sees a JavaScript stack trace. */
export const STACK_TRACE = /^\s+at .+:\d+:\d+\)?$/m;
