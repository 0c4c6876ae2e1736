import { memoryDedupe } from '../src/dedupe.ts';

// The event stream's default dedupe store (issue 25, item 6) is bounded: it keeps the ids used
// last and forgets the one used longest ago, so a long-running receiver's memory stays flat.

test('memoryDedupe remembers up to max ids and forgets the one used longest ago', () => {
  const seen = memoryDedupe({ max: 3 });
  for (const id of ['a', 'b', 'c']) seen.add(id);
  expect(seen.has('a')).toBe(true); // a is now the one used last
  seen.add('d'); // over max: b, used longest ago, goes
  expect(['a', 'b', 'c', 'd'].map((id) => seen.has(id))).toEqual([true, false, true, true]);
  for (let i = 0; i < 10_000; i++) seen.add(`e${i}`);
  expect(seen.has('e9999') && seen.has('e9997') && !seen.has('e9996')).toBe(true);
});
