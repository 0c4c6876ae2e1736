import { ConfigError } from '@trips/runtime';
import { nextRetry, readConfig } from '../src/index.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('the retry schedule (spec 6.3)', () => {
  test('with the defaults: 1m, 5m, 30m, 2h, 6h, then every 24h, ending inside three days', () => {
    const { policy } = readConfig({});
    const starts = [0];
    let firstFailedAt: number | null = null;
    for (let failures = 1; failures < 20; failures++) {
      const failedAt = starts.at(-1)!;
      const retry = nextRetry(policy, failures, firstFailedAt, failedAt);
      if (!retry) break;
      firstFailedAt = retry.firstFailedAt;
      starts.push(failedAt + retry.delayMs);
    }
    expect(starts).toEqual([
      0,
      MINUTE,
      6 * MINUTE,
      36 * MINUTE,
      2 * HOUR + 36 * MINUTE,
      8 * HOUR + 36 * MINUTE,
      32 * HOUR + 36 * MINUTE,
      56 * HOUR + 36 * MINUTE,
    ]);
  });

  test('one delay queue for each retry delay, and held deliveries claimed for twice the timeout and a margin', () => {
    const { policy } = readConfig({});
    expect(policy.queueDelaysMs).toEqual([MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 24 * HOUR]);
    expect(policy.laneLeaseMs).toBe(30_000);
    expect(readConfig({ WEBHOOK_TIMEOUT: '2s' }).policy.laneLeaseMs).toBe(14_000);
  });

  test('the window is measured from the first failure the retry carries, not from the latest one', () => {
    const policy = { retryDelaysMs: [1_000], failureWindowMs: 10_000 };
    expect(nextRetry(policy, 5, 0, 9_000)).toEqual({ delayMs: 1_000, firstFailedAt: 0 });
    expect(nextRetry(policy, 6, 0, 9_500)).toBeNull();
    expect(nextRetry(policy, 1, null, 50_000)).toEqual({ delayMs: 1_000, firstFailedAt: 50_000 });
  });
});

describe('configuration', () => {
  test('every bad setting is named at once, before anything connects', () => {
    let error: unknown;
    try {
      readConfig({
        WEBHOOK_RETRY_DELAYS: '1m,soon',
        WEBHOOK_TIMEOUT: '30s',
        DISPATCHER_STOP_TIMEOUT: '20s',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'yes',
        WEBHOOK_CA_FILE: '/nonexistent/ca.pem',
        SMTP_URL: 'http://mail',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of [
      'WEBHOOK_RETRY_DELAYS',
      'DISPATCHER_STOP_TIMEOUT',
      'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
      'WEBHOOK_CA_FILE',
      'SMTP_URL',
    ]) {
      expect(message).toContain(name);
    }
  });

  test('the defaults are those of D9', () => {
    const config = readConfig({});
    expect(config.retryDelaysMs).toEqual([MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 24 * HOUR]);
    expect(config.failureWindowMs).toBe(72 * HOUR);
    expect(config.timeoutMs).toBe(10_000);
    expect(config.allowPrivateNetworks).toBe(false);
    expect(config.smtpUrl).toBeUndefined();
    expect(config.policy.warnAfterMs).toBe(24 * HOUR);
    expect(config.breakerCooldownMs).toBe(30_000);
  });

  test("DISPATCHER_INLINE_WAIT=0ms is taken, as documented: a busy webhook's deliveries go straight to its lane", () => {
    expect(readConfig({}).inlineWaitMs).toBe(250);
    expect(readConfig({ DISPATCHER_INLINE_WAIT: '0ms' }).inlineWaitMs).toBe(0);
    expect(() => readConfig({ DISPATCHER_INLINE_WAIT: '-1ms' })).toThrow(/DISPATCHER_INLINE_WAIT/);
  });

  test('the breaker cooldown shrinks with a short failure window, so tests compress it too (D9)', () => {
    expect(readConfig({ WEBHOOK_RETRY_DELAYS: '1s', WEBHOOK_FAILURE_WINDOW: '10s' }).breakerCooldownMs).toBe(
      2500,
    );
    const explicit = {
      WEBHOOK_RETRY_DELAYS: '1s',
      WEBHOOK_FAILURE_WINDOW: '10s',
      DISPATCHER_BREAKER_COOLDOWN: '4s',
    };
    expect(readConfig(explicit).breakerCooldownMs).toBe(4000);
    expect(() => readConfig({ ...explicit, DISPATCHER_BREAKER_COOLDOWN: '10s' })).toThrow(
      /DISPATCHER_BREAKER_COOLDOWN .* must be shorter than WEBHOOK_FAILURE_WINDOW/,
    );
  });

  test('the breaker opens on more than half of at least 10 attempts in a minute, unless set otherwise', () => {
    const config = readConfig({});
    expect(config.breakerErrorPercent).toBe(50);
    expect(config.breakerVolume).toBe(10);
    expect(config.breakerWindowMs).toBe(MINUTE);
    const set = readConfig({
      DISPATCHER_BREAKER_ERROR_PERCENT: '75',
      DISPATCHER_BREAKER_VOLUME: '20',
      DISPATCHER_BREAKER_WINDOW: '2m',
    });
    expect([set.breakerErrorPercent, set.breakerVolume, set.breakerWindowMs]).toEqual([75, 20, 2 * MINUTE]);
    expect(() => readConfig({ DISPATCHER_BREAKER_ERROR_PERCENT: '100' })).toThrow(
      /DISPATCHER_BREAKER_ERROR_PERCENT must be a whole number from 1 to 99/,
    );
    expect(() => readConfig({ DISPATCHER_BREAKER_VOLUME: '0' })).toThrow(
      /DISPATCHER_BREAKER_VOLUME must be a whole number from 1 to 10000/,
    );
    expect(() => readConfig({ DISPATCHER_BREAKER_WINDOW: '500ms' })).toThrow(
      /DISPATCHER_BREAKER_WINDOW .* must be at least 1s/,
    );
  });

  test('webhooks are kept 30 s without a notification; 0 turns the cache off', () => {
    expect(readConfig({}).webhookCacheTtlMs).toBe(30_000);
    expect(readConfig({ DISPATCHER_WEBHOOK_CACHE_TTL: '5s' }).webhookCacheTtlMs).toBe(5_000);
    expect(readConfig({ DISPATCHER_WEBHOOK_CACHE_TTL: '0s' }).webhookCacheTtlMs).toBe(0);
    expect(() => readConfig({ DISPATCHER_WEBHOOK_CACHE_TTL: 'soon' })).toThrow(
      /DISPATCHER_WEBHOOK_CACHE_TTL/,
    );
    // Other durations still refuse 0.
    expect(() => readConfig({ WEBHOOK_TIMEOUT: '0s' })).toThrow(
      /WEBHOOK_TIMEOUT: durations must be greater than zero/,
    );
  });
});
