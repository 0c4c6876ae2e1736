// The suite's leak check (jest.config.js), on real handles: what it must catch, and what it must
// let settle rather than report.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { leftOver, waitForLeftOver } from '../src/leak-check-environment.ts';

const baseline = () => {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
};

test('a server, a timer and a child process left running are named, with their counts', async () => {
  const before = baseline();
  const servers: Server[] = [createServer(), createServer()];
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const timer = setTimeout(() => {}, 60_000);
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  try {
    const extra = await waitForLeftOver(before, 200);
    expect(extra).toEqual(expect.arrayContaining(['TCPServerWrap ×2', 'Timeout', 'ProcessWrap']));
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
});

test('what is closed but still going away is waited for, not reported', async () => {
  const before = baseline();
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 300)'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // Still running now: a check that did not wait would report it.
  expect(leftOver(before, baseline())).toContain('ProcessWrap');
  expect(await waitForLeftOver(before, 10_000)).toEqual([]);
  expect(await exited).toBe(0);
});

test('an unref()ed timer keeps nothing alive and is not a leak', async () => {
  const before = baseline();
  const timer = setInterval(() => {}, 1_000).unref();
  try {
    expect(await waitForLeftOver(before, 100)).toEqual([]);
  } finally {
    clearInterval(timer);
  }
});
