import { readAmqpUrls } from '@trips/broker';
import { EnvReader, readCommonConfig } from '@trips/runtime';

type Env = Record<string, string | undefined>;

export interface TripctlConfig {
  databaseUrl: string;
}

/** Said when DATABASE_URL is not set; `pnpm tripctl` in this repository sets it (scripts/local-env.sh). */
const MISSING_DATABASE_URL =
  'DATABASE_URL is not set: tripctl needs the Postgres to work on, e.g. ' +
  "DATABASE_URL='postgres://user:password@host:5432/trips'. In this repository, `pnpm tripctl` " +
  'uses the database scripts/start.sh uses (scripts/local-env.sh).';

/**
 * Read only when a command needs the database, so `tripctl --help` works whatever the environment.
 * A bad value throws a ConfigError naming the variable (exit 2) before any connection is opened.
 * Unlike the services, tripctl takes no default database: an admin command run where DATABASE_URL
 * was forgotten would otherwise report the default's refusal ("role … does not exist") as if the
 * operator's credentials were wrong, or migrate a database nobody meant.
 */
export function readConfig(env: Env): Readonly<TripctlConfig> {
  const reader = new EnvReader(env);
  reader.check(reader.isSet('DATABASE_URL'), MISSING_DATABASE_URL);
  const { databaseUrl } = readCommonConfig(reader);
  reader.done();
  return Object.freeze({ databaseUrl });
}

/** The API's address on this machine, for the demo's curl line: PORT as the API reads it (D9). */
export function defaultBaseUrl(env: Env): string {
  const reader = new EnvReader(env);
  const port = reader.read('PORT');
  reader.check(port !== 0, 'PORT is 0, a free port the API picks: give the address with --base-url');
  reader.done();
  return `http://localhost:${port}`;
}

export interface BrokerConfig {
  /** AMQP_URL: the broker, or a cluster's nodes in turn. */
  amqpUrls: string[];
  amqpPrefix: string;
  eventRetentionMs: number;
  /** Development only: accept webhook URLs on loopback or private addresses, as the dispatcher would (D7). */
  allowPrivateNetworks: boolean;
}

/**
 * What the settings module needs for the platform team: the dispatcher's broker and prefix (test,
 * redeliver), EVENT_RETENTION and WEBHOOK_ALLOW_PRIVATE_NETWORKS (D9). Not the retry schedule: a
 * failing delivery's next attempt is read as the dispatcher stored it.
 */
export function readBrokerConfig(env: Env): Readonly<BrokerConfig> {
  const reader = new EnvReader(env);
  const config = {
    amqpUrls: readAmqpUrls(reader),
    amqpPrefix: reader.read('AMQP_PREFIX'),
    eventRetentionMs: reader.read('EVENT_RETENTION'),
    allowPrivateNetworks: reader.read('WEBHOOK_ALLOW_PRIVATE_NETWORKS'),
  };
  reader.done();
  return Object.freeze(config);
}
