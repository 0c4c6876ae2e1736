import { parseDuration, formatDuration } from '../src/duration.ts';

test('parses every D9 unit', () => {
  expect(parseDuration('500ms')).toBe(500);
  expect(parseDuration('1m')).toBe(60_000);
  expect(parseDuration('3d')).toBe(259_200_000);
  expect(() => parseDuration('3 days')).toThrow(/not a duration/);
  expect(formatDuration(7_200_000)).toBe('2h');
});
