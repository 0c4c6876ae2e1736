import { Batcher } from '../src/batching.ts';

// The batcher's two ways of starting a batch: at once with the calls of the current tick, or after
// a linger that gathers the calls made meanwhile (the attempts' record, store.ts).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function recording(lingerMs?: number) {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>({
    runBatch: async (inputs) => (batches.push(inputs), inputs.map((n) => n * 2)),
    runOne: async (n) => n * 2,
    maxBatch: 100,
    lingerMs,
  });
  return { batches, batcher };
}

test('without a linger, calls of one tick go together and a later call starts a batch of its own', async () => {
  const { batches, batcher } = recording();
  const first = [batcher.call(1), batcher.call(2)];
  await sleep(20);
  const later = batcher.call(3);
  expect(await Promise.all([...first, later])).toEqual([2, 4, 6]);
  expect(batches).toEqual([[1, 2], [3]]);
});

test('with a linger, calls made within it go in one batch, each answered its own', async () => {
  const { batches, batcher } = recording(60);
  const calls = [batcher.call(1)];
  await sleep(10);
  calls.push(batcher.call(2));
  await sleep(10);
  calls.push(batcher.call(3));
  expect(await Promise.all(calls)).toEqual([2, 4, 6]);
  expect(batches).toEqual([[1, 2, 3]]);
});
