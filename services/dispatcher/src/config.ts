import { readFileSync } from 'node:fs';
import { readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

/**
 * The dispatcher's settings, read once from the environment. Each variable's default, limits and
 * meaning are its row in @trips/runtime's settings table; the rules between settings are here.
 * Fails, naming every bad variable, before any connection is opened. Every timing rule of spec 6
 * is one value here, so tests run them in seconds.
 */
export function readConfig(source: Record<string, string | undefined> = process.env) {
  const env = new EnvReader(source);
  const caFile = env.read('WEBHOOK_CA_FILE');
  const config = {
    ...readCommonConfig(env),
    amqpUrls: readAmqpUrls(env),
    /** Prepended to exchange and queue names; tests use a random one per file. */
    amqpPrefix: env.read('AMQP_PREFIX'),
    smtpUrl: env.read('SMTP_URL'),
    mailFrom: env.read('MAIL_FROM'),
    settingsUrl: env.read('SETTINGS_URL'),
    retryDelaysMs: env.read('WEBHOOK_RETRY_DELAYS'),
    failureWindowMs: env.read('WEBHOOK_FAILURE_WINDOW'),
    timeoutMs: env.read('WEBHOOK_TIMEOUT'),
    allowPrivateNetworks: env.read('WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
    caFile,
    ca: caFile ? readCa(caFile, env) : undefined,
    retentionMs: env.read('EVENT_RETENTION'),
    prefetch: env.read('DISPATCHER_PREFETCH'),
    /**
     * A consumer that received nothing for this long, and holds nothing, consumes on a new channel,
     * which returns any message its queue counts as delivered on the old one but never sent (a
     * quorum queue can strand some around a leader change: @trips/broker's Consumer, reopenIfIdle).
     * 0: never.
     */
    consumerIdleReopenMs: env.read('DISPATCHER_CONSUMER_IDLE_REOPEN'),
    /** Attempts in flight to one webhook from one dispatcher; more wait in the webhook's lane (lanes.ts). */
    endpointConcurrency: env.read('DISPATCHER_ENDPOINT_CONCURRENCY'),
    /**
     * How long a delivery may wait in memory for a slot of a busy, healthy webhook before it goes
     * to the webhook's lane (endpoint/slots.ts); 0 sends every delivery beyond the slots to the lane.
     */
    inlineWaitMs: env.read('DISPATCHER_INLINE_WAIT'),
    laneMaxInFlight: env.read('DISPATCHER_LANE_MAX_IN_FLIGHT'),
    /** How often a dispatcher looks for lanes holding deliveries (other dispatchers' holds, expired claims). */
    laneScanIntervalMs: env.read('DISPATCHER_LANE_SCAN_INTERVAL'),
    /**
     * How long a webhook's circuit breaker stays open before one trial attempt: its default, or a
     * quarter of WEBHOOK_FAILURE_WINDOW when that is shorter, so an endpoint that recovered is
     * tried well before it could be switched off (a window of seconds in tests compresses this
     * too, D9). One trial per cooldown: a recovered endpoint is back quickly, a dead one costs one
     * attempt per cooldown per dispatcher instead of one per delivery.
     */
    breakerCooldownMs: env.read('DISPATCHER_BREAKER_COOLDOWN'),
    /**
     * A webhook's breaker opens when more than this share (percent) of its attempts in the last
     * DISPATCHER_BREAKER_WINDOW failed, once at least DISPATCHER_BREAKER_VOLUME were made: open on a
     * clear majority of failures, and only after enough attempts that one event's own retries (at
     * most a handful per window) can never open it, so the retry schedule stays exact. At 100 it
     * could never open, hence at most 99.
     */
    breakerErrorPercent: env.read('DISPATCHER_BREAKER_ERROR_PERCENT'),
    breakerVolume: env.read('DISPATCHER_BREAKER_VOLUME'),
    breakerWindowMs: env.read('DISPATCHER_BREAKER_WINDOW'),
    /**
     * How long a dispatcher keeps an agency's webhooks (and a webhook's) without hearing of a
     * change. Every change reaches it within milliseconds through Postgres LISTEN/NOTIFY and drops
     * what it kept, so this only bounds how stale a lookup could be should a notification ever be
     * lost without the connection being seen to go; each expiry costs one read. 0 turns the cache
     * off: every delivery batch reads its webhooks, and no LISTEN connection is opened.
     */
    webhookCacheTtlMs: env.read('DISPATCHER_WEBHOOK_CACHE_TTL'),
    /**
     * A receiver that answers 429 or 503 asks us to wait (D10). A pause up to this long keeps the
     * refused delivery in its lane, due when the pause ends, off the retry schedule; a longer one
     * is a failure on the schedule, retried no sooner than the receiver asked.
     */
    lanePauseMaxMs: env.read('DISPATCHER_LANE_PAUSE_MAX'),
    /**
     * The pause after a 429 or 503 without a Retry-After we can read: doubled with each such answer
     * in a row, up to thirty times this. Short: such a receiver has said nothing of how long.
     */
    pauseBackoffMs: env.read('DISPATCHER_PAUSE_BACKOFF'),
    vacuumMs: env.read('QUEUE_VACUUM_INTERVAL'),
    healthPort: env.read('DISPATCHER_HEALTH_PORT'),
    stopTimeoutMs: env.read('DISPATCHER_STOP_TIMEOUT'),
  };
  env.check(
    config.stopTimeoutMs > config.timeoutMs,
    `DISPATCHER_STOP_TIMEOUT (${config.stopTimeoutMs} ms) must be longer than WEBHOOK_TIMEOUT (${config.timeoutMs} ms), so in-flight deliveries can finish`,
  );
  if (!env.isSet('DISPATCHER_BREAKER_COOLDOWN')) {
    config.breakerCooldownMs = Math.min(config.breakerCooldownMs, Math.round(config.failureWindowMs / 4));
  }
  env.check(
    config.breakerCooldownMs < config.failureWindowMs,
    `DISPATCHER_BREAKER_COOLDOWN (${config.breakerCooldownMs} ms) must be shorter than WEBHOOK_FAILURE_WINDOW (${config.failureWindowMs} ms), or a recovered endpoint could be switched off untried`,
  );
  env.check(
    config.breakerWindowMs >= 1_000,
    `DISPATCHER_BREAKER_WINDOW (${config.breakerWindowMs} ms) must be at least 1s: the breaker counts it in ten slices`,
  );
  env.check(
    config.failureWindowMs >= config.retryDelaysMs[0]!,
    'WEBHOOK_FAILURE_WINDOW must not be shorter than the first of WEBHOOK_RETRY_DELAYS',
  );
  env.done();
  return Object.freeze({ ...config, policy: deliveryPolicy(config) });
}

function readCa(file: string, env: EnvReader): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    env.check(
      false,
      `WEBHOOK_CA_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return undefined;
  }
}

/**
 * The delivery policy as data, derived from the settings in one place. Everything that decides when
 * to retry, pause, warn or switch off reads it from here (lifecycle.ts, switch-off.ts).
 */
function deliveryPolicy(c: {
  retryDelaysMs: number[];
  failureWindowMs: number;
  timeoutMs: number;
  lanePauseMaxMs: number;
  pauseBackoffMs: number;
}) {
  return {
    retryDelaysMs: c.retryDelaysMs,
    failureWindowMs: c.failureWindowMs,
    /** A receiver's pause up to this long keeps its refused delivery in the lane (lifecycle.ts). */
    shortPauseMs: c.lanePauseMaxMs,
    /** How the receiver's pace pauses a webhook (endpoint/pace.ts): never past the failure window. */
    pause: {
      backoffMs: c.pauseBackoffMs,
      maxBackoffMs: Math.min(30 * c.pauseBackoffMs, c.failureWindowMs),
      maxPauseMs: c.failureWindowMs,
    },
    /** Owners are warned once a webhook has failed for a third of the window (issue 4). */
    warnAfterMs: Math.round(c.failureWindowMs / 3),
    /**
     * How often the switch-off policy looks for webhooks past the window: a twentieth of it, between
     * 250 ms and a minute, so a 3-day window is enforced to the minute and a 10 s one in tests
     * to half a second.
     */
    sweepIntervalMs: Math.min(60_000, Math.max(250, Math.round(c.failureWindowMs / 20))),
    /** Every delay a retry can wait in a queue: one delay queue each (@trips/broker's topology.ts). */
    queueDelaysMs: [...new Set(c.retryDelaysMs)],
    /**
     * How long a dispatcher's claim on held deliveries lasts (lanes.ts): the deliveries claimed at
     * once start within one attempt's time and end within another, so twice the timeout and a
     * margin. Only a dispatcher that died lets a claim run out; then another takes the delivery.
     */
    laneLeaseMs: 2 * c.timeoutMs + 10_000,
  };
}

export type DispatcherConfig = ReturnType<typeof readConfig>;
export type DeliveryPolicy = DispatcherConfig['policy'];
