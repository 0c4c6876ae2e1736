import { sql, type Kysely } from 'kysely';
import { createTestDatabase, type TestDatabase } from '@trips/testkit';
import {
  activeDeliveryTargets,
  createAgency,
  createDb,
  createWebhook,
  findDeliveryTargets,
  recordAttempts,
  type Database,
} from '../src/index.ts';
import { preparedName } from '../src/prepared.ts';

let t: TestDatabase;
// One connection, so every statement below runs on the session whose prepared statements are read.
let db: Kysely<Database>;
beforeAll(async () => {
  t = await createTestDatabase();
  db = createDb(t.url, { max: 1 });
});
afterAll(async () => {
  await db.destroy();
  await t.drop();
});

const preparedOnThisConnection = async () =>
  (await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(db)).rows.map(
    (r) => r.name,
  );

test('marked statements are prepared once per connection and answer as before; unmarked ones are not', async () => {
  const agency = await createAgency(db, { name: 'Links & Co' });
  const { webhook } = await createWebhook(db, {
    agencyId: agency.id,
    url: 'https://hooks.example/a',
    eventTypes: ['trip.created'],
  });
  expect(await preparedOnThisConnection()).toEqual([]);

  for (let i = 0; i < 3; i++) {
    const attempt = {
      webhookId: webhook.id,
      eventId: `evt_${i}`,
      eventType: 'trip.created',
      attempt: 1,
      attemptedAt: new Date(),
      durationMs: 5,
      statusCode: 500,
      error: 'http_status',
      responseBody: 'no',
    };
    await recordAttempts(db, [attempt]);
  }
  const byId = await findDeliveryTargets(db, [webhook.id]);
  const active = await activeDeliveryTargets(db, [agency.id]);

  // The same answers a fresh, unprepared reading gives.
  expect(byId).toEqual(active);
  expect(byId).toMatchObject([{ id: webhook.id, url: 'https://hooks.example/a', epoch: webhook.epoch }]);
  const logged = await db.selectFrom('webhook_attempts').select('event_id').orderBy('event_id').execute();
  expect(logged.map((r) => r.event_id)).toEqual(['evt_0', 'evt_1', 'evt_2']);
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', webhook.id)
    .executeTakeFirstOrThrow();
  expect(row.last_error).toBe('http_status (HTTP 500)');
  expect(row.failing_since).not.toBeNull();

  // Three statements: the attempts batch (three calls, one statement) and the two WHERE clauses
  // of the targets read, which are two texts and so two names.
  const names = await preparedOnThisConnection();
  expect(names).toHaveLength(3);
  expect(names.filter((n) => n.startsWith('record_attempts_'))).toHaveLength(1);
  expect(names.filter((n) => n.startsWith('delivery_targets_'))).toHaveLength(2);
});

test('a statement name belongs to one text; unmarked text gets none', () => {
  const a = preparedName('/* prepared: sample */ SELECT 1');
  const b = preparedName('/* prepared: sample */ SELECT 2');
  expect(a).toMatch(/^sample_[0-9a-f]{12}$/);
  expect(b).toMatch(/^sample_[0-9a-f]{12}$/);
  expect(a).not.toBe(b);
  expect(preparedName('/* prepared: sample */ SELECT 1')).toBe(a);
  expect(preparedName('SELECT 1 /* prepared: sample */')).toBeUndefined();
  expect(preparedName('/* prepared: Bad-Name */ SELECT 1')).toBeUndefined();
});

test('after the connection is lost, its replacement prepares the statements again', async () => {
  const agency = await createAgency(db, { name: 'Dunes' });
  await activeDeliveryTargets(db, [agency.id]);
  const pid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
  await sql`SELECT pg_terminate_backend(${pid})`.execute(t.db);
  // Calls fail while the pool still holds the dead client; the pool drops it, and the next call
  // runs on a new connection, which has prepared nothing yet.
  let answer: unknown;
  for (let tries = 0; answer === undefined && tries < 20; tries++) {
    answer = await activeDeliveryTargets(db, [agency.id]).catch(() => undefined);
    if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(answer).toEqual([]);
  const newPid = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;
  expect(newPid).not.toBe(pid);
  expect((await preparedOnThisConnection()).filter((n) => n.startsWith('delivery_targets_'))).toHaveLength(1);
});
