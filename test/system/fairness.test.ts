import { queueNames, topology } from '@trips/broker';
import { createPool } from '@trips/db';
import { createAgency } from '@trips/db/agencies';
import { createWebhook } from '@trips/db/webhooks';
import {
  readConfig as readDispatcherConfig,
  startDispatcherService,
  type DispatcherService,
} from '@trips/dispatcher';
import {
  readConfig as readRecorderConfig,
  startRecorderService,
  type RecorderService,
} from '@trips/recorder';
import {
  amqpUrl,
  createTestCa,
  createTestDatabase,
  deleteAmqpObjects,
  LogCapture,
  randomAmqpPrefix,
  startReceiver,
  waitFor,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
} from '@trips/testkit';

// Fair delivery across agencies (issue 23), end to end: the recorder and the dispatcher with their
// production defaults, one agency's bulk import written as the host application writes it, and
// another agency's trips written one every 200 ms meanwhile. The importer's endpoint is healthy
// (20 ms an answer), so its backlog drains at its pace while the other agency's trips still reach
// their webhook within a few hundred milliseconds. On the design before webhook lanes, fair claims
// and the bounded events queue, they waited seconds behind the import.
const IMPORT = 4_000;
const STEADY = 12;
const STEADY_EVERY_MS = 200;
/**
 * Generous, for a test that runs every service in one process beside others: the benchmark
 * (`pnpm bench:fairness`) holds the real target. A trip that waited behind the import waited ten
 * seconds and more.
 */
const MAX_LATENCY_MS = 2_500;

let ca: TestCa;
let t: TestDatabase;
let prefix: string;
let recorder: RecorderService | undefined;
let dispatcher: DispatcherService | undefined;
/** The host application's connections: each statement its own transaction. */
let writer: ReturnType<typeof createPool> | undefined;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  ca = await createTestCa();
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  writer = createPool(t.url, { max: 4, applicationName: 'fairness-test-writer' });
  const common = { DATABASE_URL: t.url, AMQP_URL: amqpUrl, AMQP_PREFIX: prefix, LOG_LEVEL: 'warn' };
  dispatcher = await startDispatcherService(
    readDispatcherConfig({
      ...common,
      DISPATCHER_HEALTH_PORT: '0',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
    }),
    new LogCapture('dispatcher').logger,
  );
  recorder = await startRecorderService(
    readRecorderConfig({ ...common, RECORDER_HEALTH_PORT: '0' }),
    new LogCapture('recorder').logger,
  );
});

afterAll(async () => {
  await recorder?.stop();
  await dispatcher?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  await writer?.end();
  await deleteAmqpObjects({
    queues: queueNames(topology(prefix, readDispatcherConfig({}).policy.queueDelaysMs)),
    exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`],
  });
  await t?.drop();
});

async function agencyWithWebhook(name: string, answerMs: number) {
  const agency = await createAgency(t.db, { name, apiEnabled: true, subscriptionStatus: 'active' });
  const receiver = await startReceiver(ca);
  receivers.push(receiver);
  if (answerMs > 0) receiver.answer = () => ({ status: 200, delayMs: answerMs });
  await createWebhook(t.db, { agencyId: agency.id, url: receiver.url, eventTypes: ['trip.created'] });
  return { agencyId: agency.id, receiver };
}

/** Trips as the host application writes them; answers their ids and when they were committed. */
async function writeTrips(agencyId: string, count: number): Promise<{ ids: string[]; at: number }> {
  const { rows } = await writer!.query<{ id: string }>(
    `INSERT INTO trips (agency_id, is_template, title, region, base_camp, num_days, golfers)
     SELECT $1, false, 'Imported trip ' || n, 'Scotland', 'St Andrews', 5, 8
       FROM generate_series(1, $2::int) AS n
     RETURNING id`,
    [agencyId, count],
  );
  return { ids: rows.map((r) => r.id), at: Date.now() };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The trip ids a receiver got trip.created for. */
const tripOf = (body: string) => (JSON.parse(body) as { related_object: { id: string } }).related_object.id;
const tripsAt = (r: TestReceiver) => new Set(r.requests.map((q) => tripOf(q.body)));

test("one agency's bulk import does not hold up another agency's webhooks, and arrives whole", async () => {
  const importer = await agencyWithWebhook('Bulk Importers', 20);
  const steady = await agencyWithWebhook('Steady Tours', 0);

  // The import: four statements, as a bulk import writes.
  const imported = (
    await Promise.all(Array.from({ length: 4 }, () => writeTrips(importer.agencyId, IMPORT / 4)))
  ).flatMap((w) => w.ids);

  const writtenAt = new Map<string, number>();
  for (let i = 0; i < STEADY; i++) {
    const { ids, at } = await writeTrips(steady.agencyId, 1);
    writtenAt.set(ids[0]!, at);
    await sleep(STEADY_EVERY_MS);
  }
  await waitFor(() => tripsAt(steady.receiver).size === STEADY, {
    timeoutMs: 60_000,
    what: 'the steady trips',
  });
  // The import was still being delivered when the last steady trip arrived: they really ran side by side.
  expect(tripsAt(importer.receiver).size).toBeLessThan(IMPORT);

  const latencies = steady.receiver.requests.map((q) => q.at - writtenAt.get(tripOf(q.body))!);
  expect(Math.max(...latencies)).toBeLessThan(MAX_LATENCY_MS);

  // Nothing of the import lost, and its webhook's lane empty at the end.
  await waitFor(() => ((got) => imported.every((id) => got.has(id)))(tripsAt(importer.receiver)), {
    timeoutMs: 120_000,
    intervalMs: 500,
    what: 'the whole import at its webhook',
  });
  // A delivery leaves its lane once its attempt is recorded, just after the receiver has it.
  await waitFor(async () => (await t.db.selectFrom('held_deliveries').select('id').execute()).length === 0, {
    timeoutMs: 5_000,
    what: "the importer's lane empty",
  });
}, 180_000);
