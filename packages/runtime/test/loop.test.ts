import { createLogger } from '../src/logger.ts';
import { Loop } from '../src/loop.ts';

function capture() {
  const lines: { level: number; msg: string; failures?: number; loop?: string }[] = [];
  const logger = createLogger('test', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

test('a loop failing round after round logs one line when it starts failing and one when it works again', async () => {
  const { logger, lines } = capture();
  let round = 0;
  const failing = new Set([2, 3, 4, 6]);
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const loop = new Loop(
    'record',
    async () => {
      round++;
      if (round === 8) done();
      if (failing.has(round)) throw new Error('Connection terminated unexpectedly');
      return 1;
    },
    1_000,
    logger,
  );
  loop.start();
  await finished;
  await loop.stop();
  // Two outages: rounds 2–4 and round 6.
  expect(lines.map((l) => [l.level >= 50 ? 'error' : 'info', l.msg, l.loop, l.failures])).toEqual([
    ['error', 'round failed; retrying quietly until it works', 'record', undefined],
    ['info', 'round failed: works again', 'record', 3],
    ['error', 'round failed; retrying quietly until it works', 'record', undefined],
    ['info', 'round failed: works again', 'record', 1],
  ]);
}, 15_000);
