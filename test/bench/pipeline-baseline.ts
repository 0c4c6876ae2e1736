// The baseline commit's checkout for `pnpm bench:pipeline`: a temporary git worktree, detached at
// the commit, with its own dependencies installed from its own lockfile, removed (with
// `git worktree remove --force`) when the bench cleans up, whether it ends or fails.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { onCleanup } from './lib.ts';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SETUP = fileURLToPath(new URL('./pipeline-setup.ts', import.meta.url));

/** pnpm as `pnpm bench:pipeline` was run with (npm_execpath), else the one on PATH. */
function pnpm(args: string[], cwd: string) {
  const execPath = process.env.npm_execpath;
  return execPath && /pnpm/.test(execPath)
    ? run(process.execPath, [execPath, ...args], { cwd, maxBuffer: 16 << 20 })
    : run('pnpm', args, { cwd, maxBuffer: 16 << 20 });
}

/**
 * Checks `commit` out into a temporary worktree and installs its dependencies: offline from the
 * store when every package is there, else from the registry. pipeline-setup.ts is copied in, so
 * it runs with the baseline's packages (test/bench/ exists at every commit it is meant for).
 * Answers the worktree's directory.
 */
export async function checkoutBaseline(commit: string): Promise<string> {
  const parent = mkdtempSync(join(tmpdir(), 'bench-pipeline-'));
  const dir = join(parent, 'baseline');
  onCleanup(async () => {
    await run('git', ['worktree', 'remove', '--force', dir], { cwd: REPO }).catch((error: Error) =>
      console.error(`git worktree remove ${dir}: ${error.message}`),
    );
    rmSync(parent, { recursive: true, force: true });
    await run('git', ['worktree', 'prune'], { cwd: REPO });
  });
  await run('git', ['worktree', 'add', '--detach', dir, commit], { cwd: REPO });
  try {
    await pnpm(['install', '--frozen-lockfile', '--offline'], dir);
  } catch {
    await pnpm(['install', '--frozen-lockfile'], dir);
  }
  copyFileSync(SETUP, join(dir, 'test/bench/pipeline-setup.ts'));
  return dir;
}

/** A commit, short, as `git rev-parse --short` prints it; HEAD says so when tracked files differ from it. */
export async function shortCommit(rev: string): Promise<string> {
  const commit = (await run('git', ['rev-parse', '--short', rev], { cwd: REPO })).stdout.trim();
  if (rev !== 'HEAD') return commit;
  const changed = (await run('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO })).stdout;
  return changed.trim() ? `${commit} with uncommitted changes` : commit;
}
