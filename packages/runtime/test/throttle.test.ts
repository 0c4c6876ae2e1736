import { atMostEvery } from '../src/throttle.ts';

test('opens on the first call, then at most once per interval', () => {
  let clock = 1_000;
  const due = atMostEvery(60_000, () => clock);
  expect(due()).toBe(true);
  clock += 59_999;
  expect(due()).toBe(false);
  clock += 1;
  expect(due()).toBe(true);
  expect(due()).toBe(false);
});
