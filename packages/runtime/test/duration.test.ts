import { parseDuration, formatDuration, describeDuration } from '../src/duration.ts';

test('parses every D9 unit', () => {
  expect(parseDuration('500ms')).toBe(500);
  expect(parseDuration('1m')).toBe(60_000);
  expect(parseDuration('3d')).toBe(259_200_000);
  expect(() => parseDuration('3 days')).toThrow(/not a duration/);
  expect(formatDuration(7_200_000)).toBe('2h');
});

test('describeDuration says a duration in its largest whole unit', () => {
  expect(describeDuration(30 * 86_400_000)).toBe('30 days');
  expect(describeDuration(36 * 3_600_000)).toBe('36 hours');
  expect(describeDuration(90 * 60_000)).toBe('90 minutes');
  expect(describeDuration(86_400_000)).toBe('1 day');
});
