// What the servers a test starts of its own have in common (rabbitmq-cluster.ts, postgres-replica.ts):
// a script of scripts/ that starts them beside the machine's own in a directory of their own, prints
// their settings, and stops and starts them on the test's word.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Runs scripts/`name` with `args`; a failure says what the script printed. */
export async function runScript(name: string, args: string[], timeout: number) {
  const script = fileURLToPath(new URL(`../../../scripts/${name}`, import.meta.url));
  try {
    return await run('bash', [script, ...args], { timeout });
  } catch (error) {
    const { stderr, stdout } = error as { stderr?: string; stdout?: string };
    throw new Error(`${name} ${args[0]} failed: ${stderr || stdout || (error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * `name up ARGS --dir DIR` in a fresh temporary directory; answers the directory and the NAME=value
 * settings the script printed. When `up` fails, whatever did start is stopped (`down`): it must not
 * outlive the test.
 */
export async function upInFreshDir(
  name: string,
  args: string[],
  timeouts: { up: number; down: number },
): Promise<{ dir: string; settings: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), `trips-${name.replace(/\.sh$/, '')}-`));
  const { stdout } = await runScript(name, ['up', '--dir', dir, ...args], timeouts.up).catch(
    async (error: Error) => {
      await runScript(name, ['down', '--dir', dir], timeouts.down).catch(() => {});
      throw error;
    },
  );
  const settings = Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  return { dir, settings };
}

/** `start` made safe to call twice: a test keeps it for its afterAll, whatever happened before. */
export function startOnce(start: () => Promise<void>): () => Promise<void> {
  let started = false;
  return async () => {
    if (started) return;
    started = true;
    await start();
  };
}
