import { describeAttempt } from '../src/attempt-words.ts';
import { describePause, describeRateLimit } from '../src/pace-words.ts';
import { parseRateLimit, SettingsError } from '../src/index.ts';

// The receiver's pace in the words the page, tripctl and the owners' e-mails share (D10).

const failed = (status: number, responseHeaders: string | null) =>
  describeAttempt({
    succeeded: false,
    status_code: status,
    error: 'http_status',
    error_detail: null,
    duration_ms: 12,
    response_headers: responseHeaders,
  });

describe('an answer that asks to wait (429, 503) says what its Retry-After asked', () => {
  test.each([
    [429, 'content-type: text/plain\nretry-after: 1', 'asked to wait: 429, Retry-After 1 s'],
    [503, 'Retry-After:120\r\nx-other: y', 'asked to wait: 503, Retry-After 120 s'],
    [
      503,
      'retry-after: Sun, 06 Nov 2033 08:49:37 GMT',
      'asked to wait: 503, Retry-After 2033-11-06 08:49:37 UTC',
    ],
    [503, 'content-type: text/plain', 'asked to wait: 503, no Retry-After'],
    [
      429,
      'retry-after: soon',
      "asked to wait: 429, a Retry-After that is neither seconds nor an HTTP date ('soon')",
    ],
    // Attempts made before the answer's headers were kept.
    [429, null, 'asked to wait: 429'],
  ])('%d with %j', (status, headers, words) => {
    expect(failed(status, headers)).toBe(words);
  });

  test('any other status is a plain failure', () => {
    expect(failed(500, 'retry-after: 1')).toBe(
      'answered 500 Internal Server Error: only a 2xx answer counts as delivered',
    );
  });
});

describe('a pause', () => {
  const until = new Date('2030-01-01T15:04:05Z');
  const since = new Date(until.getTime() - 2000);
  test("with the receiver's Retry-After", () => {
    expect(describePause({ paused_until: until, paused_at: since, status: 429, retry_after_ms: 1000 })).toBe(
      'the receiver answered 429 with Retry-After 1 s',
    );
  });
  test('without one: how long we chose to wait', () => {
    expect(describePause({ paused_until: until, paused_at: since, status: 503, retry_after_ms: null })).toBe(
      'the receiver answered 503 without a Retry-After; we wait 2 s',
    );
  });
});

describe('a rate limit', () => {
  test('in words', () => {
    expect(describeRateLimit(null)).toBe('none');
    expect(describeRateLimit(1)).toBe('at most 1 delivery a second');
    expect(describeRateLimit(20)).toBe('at most 20 deliveries a second');
  });

  test.each([
    ['1', 1],
    [' 1000 ', 1000],
    ['007', 7],
    ['off', null],
    ['OFF', null],
    ['', null],
  ])('%j is %j', (typed, limit) => {
    expect(parseRateLimit(typed)).toBe(limit);
  });

  test.each(['0', '1001', '1.5', '-3', '+5', '1e3', 'ten', '5 a second', '99999999999'])(
    '%j is refused as invalid, with the rule',
    (typed) => {
      const error = (() => {
        try {
          parseRateLimit(typed);
        } catch (e) {
          return e;
        }
        throw new Error('not refused');
      })();
      expect(error).toBeInstanceOf(SettingsError);
      expect(error).toMatchObject({
        code: 'invalid',
        message: 'a rate limit is a whole number of deliveries a second from 1 to 1000, or off for none.',
      });
    },
  );
});
