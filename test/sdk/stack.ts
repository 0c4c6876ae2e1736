// The real services for the SDK's tests: the API, the recorder and (when asked) the dispatcher,
// each its own Node process as its image runs it, on a fresh database, a random AMQP prefix and
// free ports. Data is written as the host application writes it: plain SQL on the write contract.
import { queueNames, topology } from '@trips/broker';
import { createAgency } from '@trips/db/agencies';
import { createApiKey } from '@trips/db/api-keys';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  type TestCa,
  type TestDatabase,
} from '@trips/testkit';
import { freePort, Replica } from '../system/cluster.ts';

const ALL_SCOPES = ['trips:read', 'payments:read', 'contacts:read', 'events:read'];

export interface Stack {
  t: TestDatabase;
  db: TestDatabase['db'];
  apiUrl: string;
  ca: TestCa | undefined;
  replicas: Replica[];
  /** A new agency with API access and a key of these scopes. */
  agency(scopes?: string[]): Promise<{ agencyId: string; key: string; keyId: string }>;
  stop(): Promise<void>;
}

export async function startStack(
  options: { dispatcher?: boolean; env?: Record<string, string>; apiEnv?: Record<string, string> } = {},
): Promise<Stack> {
  const t = await createTestDatabase();
  const prefix = randomAmqpPrefix();
  const ca = options.dispatcher ? await createTestCa() : undefined;
  const common = {
    DATABASE_URL: t.url,
    AMQP_URL: amqpUrl,
    AMQP_PREFIX: prefix,
    EVENT_GROUP_QUIET: '200ms',
    EVENT_GROUP_MAX: '1s',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const replicas: Replica[] = [];
  if (ca) {
    const port = await freePort();
    const env = {
      ...common,
      DISPATCHER_HEALTH_PORT: String(port),
      WEBHOOK_CA_FILE: ca.caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_DELAYS: '1s,2s',
      WEBHOOK_FAILURE_WINDOW: '5m',
      WEBHOOK_TIMEOUT: '2s',
      DISPATCHER_STOP_TIMEOUT: '5s',
    };
    replicas.push(new Replica('dispatcher', 'sdk-dispatcher', env, port));
  }
  const recorderPort = await freePort();
  replicas.push(
    new Replica(
      'recorder',
      'sdk-recorder',
      { ...common, RECORDER_HEALTH_PORT: String(recorderPort) },
      recorderPort,
    ),
  );
  const apiPort = await freePort();
  const apiEnv = {
    ...common,
    PORT: String(apiPort),
    API_METRICS_PORT: String(await freePort()),
    API_SHUTDOWN_DEADLINE: '2s',
    ...options.apiEnv,
  };
  replicas.push(new Replica('api', 'sdk-api', apiEnv, apiPort));
  const stop = async () => {
    for (const replica of replicas.reverse()) await replica.stop(5_000).catch(() => replica.cleanup());
    for (const replica of replicas) await replica.cleanup();
    const names = topology(prefix, [1_000, 2_000]);
    await deleteAmqpObjects({
      queues: queueNames(names),
      exchanges: [names.eventsExchange, names.expressExchange],
    });
    await t.drop();
  };
  try {
    for (const replica of replicas) await replica.start();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    t,
    db: t.db,
    apiUrl: `http://127.0.0.1:${apiPort}`,
    ca,
    replicas,
    agency: async (scopes = ALL_SCOPES) => {
      const { id: agencyId } = await createAgency(t.db, {
        name: 'Fairway Tours',
        apiEnabled: true,
        subscriptionStatus: 'active',
      });
      const { key, id: keyId } = await createApiKey(t.db, { agencyId, scopes });
      return { agencyId, key, keyId };
    },
    stop,
  };
}

/** A trip as the host application inserts it; its id. */
export async function insertTrip(db: TestDatabase['db'], agencyId: string, title = 'Algarve spring') {
  const row = await db
    .insertInto('trips')
    .values({ agency_id: agencyId, title, num_days: 7 } as never)
    .returning(['id'])
    .executeTakeFirstOrThrow();
  return row.id as string;
}

export async function insertPayment(db: TestDatabase['db'], agencyId: string, tripId: string) {
  const row = await db
    .insertInto('payments')
    .values({
      agency_id: agencyId,
      trip_id: tripId,
      description: 'Deposit',
      amount: 50_000,
      currency: 'EUR',
      visibility: 'shown',
    } as never)
    .returning(['id'])
    .executeTakeFirstOrThrow();
  return row.id as string;
}

export async function insertContact(db: TestDatabase['db'], agencyId: string) {
  const row = await db
    .insertInto('contacts')
    .values({ agency_id: agencyId, first_name: 'Rory', last_name: 'Fairway' } as never)
    .returning(['id'])
    .executeTakeFirstOrThrow();
  return row.id as string;
}

export async function setTripStatus(db: TestDatabase['db'], tripId: string, status: string) {
  await db
    .updateTable('trips')
    .set({ status } as never)
    .where('id', '=', tripId)
    .execute();
}
