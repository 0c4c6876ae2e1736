import { EnvReader, readCommonConfig } from '@trips/runtime';

type Env = Record<string, string | undefined>;

export interface TripctlConfig {
  databaseUrl: string;
}

/**
 * Read only when a command needs the database, so `tripctl --help` works whatever the environment.
 * A bad value throws a ConfigError naming the variable (exit 2) before any connection is opened.
 */
export function readConfig(env: Env): Readonly<TripctlConfig> {
  const reader = new EnvReader(env);
  const { databaseUrl } = readCommonConfig(reader);
  reader.done();
  return Object.freeze({ databaseUrl });
}

/** The API's address on this machine, for the demo's curl line: PORT as the API reads it (D9). */
export function defaultBaseUrl(env: Env): string {
  const reader = new EnvReader(env);
  const port = reader.int('PORT', 3000, { min: 1, max: 65_535 });
  reader.done();
  return `http://localhost:${port}`;
}

export interface BrokerConfig {
  amqpUrl: string;
  amqpPrefix: string;
  eventRetentionMs: number;
}

/** What `webhook test|redeliver` need: the dispatcher's broker and prefix, and EVENT_RETENTION (D9). */
export function readBrokerConfig(env: Env): Readonly<BrokerConfig> {
  const reader = new EnvReader(env);
  const config = {
    amqpUrl: reader.url('AMQP_URL', 'amqp://guest:guest@localhost:5672', ['amqp:', 'amqps:'])!,
    amqpPrefix: reader.string('AMQP_PREFIX', ''),
    eventRetentionMs: reader.duration('EVENT_RETENTION', '30d'),
  };
  reader.done();
  return Object.freeze(config);
}
