import { ASKS_TO_WAIT, parseRetryAfter } from '../src/index.ts';

// A receiver's Retry-After, read one way (RFC 9110 10.2.3): whole seconds or an HTTP date, and
// anything else as none.

test.each([
  ['whole seconds', '1', { seconds: 1 }],
  ['seconds with spaces', '  120 ', { seconds: 120 }],
  ['an IMF-fixdate', 'Sun, 06 Nov 2033 08:49:37 GMT', { at: new Date('2033-11-06T08:49:37Z') }],
  ['an RFC 850 date', 'Sunday, 06-Nov-33 08:49:37 GMT', { at: new Date('2033-11-06T08:49:37Z') }],
  ['an asctime date', 'Sun Nov  6 08:49:37 2033', { at: new Date(2033, 10, 6, 8, 49, 37) }],
])('%s', (_what, value, asked) => {
  expect(parseRetryAfter(value)).toEqual(asked);
});

test.each([
  ['nothing', undefined],
  ['an empty value', ' '],
  ['a fraction', '1.5'],
  ['a negative number', '-3'],
  ['a date Date.parse would take, but not an HTTP date', 'Nov 6 2033'],
  ['words', 'soon'],
  ['a date without its weekday', '06 Nov 2033 08:49:37 GMT'],
  ['a weekday and nonsense', 'Sun, never GMT'],
])('%s is no Retry-After', (_what, value) => {
  expect(parseRetryAfter(value)).toBeUndefined();
});

test('the answers that ask to wait are 429 and 503 (D10)', () => {
  expect([...ASKS_TO_WAIT].sort()).toEqual([429, 503]);
});
