// The bare pipeline of `pnpm bench:pipeline`, the floor ours is measured against: the same trip
// INSERT into a table of the same shape as `trips`, whose one capture trigger writes a minimal
// outbox row in the same transaction; a bare relay (pipeline-bare-relay.ts), which keeps each event
// in a bare events table as the recorder keeps them for GET /events, and a bare consumer
// (pipeline-bare-consumer.ts), each its own process. Lives in schema `bare` of a database cloned
// from our template, so the attempts go to our webhook_attempts table under its foreign key.
// bench:recorder's floor is the same schema and relay.
import { fileURLToPath } from 'node:url';
import { createPool } from '@trips/db';
import { startChild, type Child } from './dispatcher-procs.ts';

const RELAY = fileURLToPath(new URL('./pipeline-bare-relay.ts', import.meta.url));
const CONSUMER = fileURLToPath(new URL('./pipeline-bare-consumer.ts', import.meta.url));

/**
 * `bare.trips` is `trips` as the host writes it: the same columns, defaults, checks, indexes, the
 * foreign key to its agency and the updated_at trigger (the write contract's, not the pipeline's),
 * so the INSERT costs the same; only the capture differs. `bare.outbox` holds what the relay needs
 * to make the event and nothing else: no old/new row images, no source. `bare.events` is the
 * least of ours' `events` (migration 0003) that serves GET /events: the same columns, the agency's
 * cursor index (agency_id, seq) and a primary key on seq, but not partitioned by day (ours is, for
 * retention) and with no queue of unpublished events beside it (ours' events_unpublished): the
 * relay publishes the events it has just inserted and commits after the broker's confirms.
 */
export async function createBareSchema(databaseUrl: string): Promise<void> {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'bench-setup' });
  try {
    await pool.query(`
      CREATE SCHEMA bare;
      CREATE TABLE bare.trips (LIKE public.trips INCLUDING ALL);
      ALTER TABLE bare.trips ADD FOREIGN KEY (agency_id) REFERENCES public.agencies (id) ON DELETE CASCADE;
      CREATE TRIGGER trips_updated_at BEFORE INSERT OR UPDATE ON bare.trips
        FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();
      CREATE TABLE bare.outbox (
        id bigserial PRIMARY KEY,
        agency_id text NOT NULL,
        trip_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );
      CREATE TABLE bare.events (
        seq bigserial PRIMARY KEY,
        id text NOT NULL,
        agency_id text NOT NULL,
        type text NOT NULL,
        object_type text NOT NULL,
        object_id text NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL
      );
      CREATE INDEX events_agency_seq ON bare.events (agency_id, seq);
      CREATE FUNCTION bare.capture() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO bare.outbox (agency_id, trip_id) VALUES (NEW.agency_id, NEW.id);
          RETURN NULL;
        END $$;
      CREATE TRIGGER trips_capture AFTER INSERT ON bare.trips FOR EACH ROW EXECUTE FUNCTION bare.capture();
    `);
  } finally {
    await pool.end();
  }
}

export interface ConsumerSettings {
  databaseUrl: string;
  amqpUrl: string;
  /** The queue it consumes. */
  queue: string;
  webhookUrl: string;
  webhookId: string;
  secret: string;
  caFile: string;
  /** Extra settings (pipeline-bare-consumer.ts's header names them). */
  env?: Record<string, string>;
}

/** Starts a bare consumer (pipeline-bare-consumer.ts); it answers ready once consuming. */
export function startBareConsumer(s: ConsumerSettings): Child {
  return startChild(
    'bare-consumer',
    CONSUMER,
    {
      DATABASE_URL: s.databaseUrl,
      AMQP_URL: s.amqpUrl,
      AMQP_QUEUE: s.queue,
      BENCH_WEBHOOK_URL: s.webhookUrl,
      BENCH_WEBHOOK_ID: s.webhookId,
      BENCH_SECRET: s.secret,
      WEBHOOK_CA_FILE: s.caFile,
      ...s.env,
    },
    true,
  );
}

/** The one queue between relay and consumer is `queue`, under the pipeline's AMQP prefix. */
export type BareSettings = Omit<ConsumerSettings, 'env'>;

/** Starts the relay and the consumer; each answers ready once connected and its queue declared. */
export async function startBare(s: BareSettings): Promise<{ relay: Child; consumer: Child }> {
  const relay = startChild(
    'bare-relay',
    RELAY,
    { DATABASE_URL: s.databaseUrl, AMQP_URL: s.amqpUrl, AMQP_QUEUE: s.queue },
    true,
  );
  const consumer = startBareConsumer(s);
  try {
    await Promise.all([relay, consumer].map((child) => child.next((m) => m.ready === true)));
  } catch (error) {
    await Promise.all([relay.stop(), consumer.stop()]);
    throw error;
  }
  return { relay, consumer };
}
