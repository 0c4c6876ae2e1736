import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  amqpUrl,
  collectEvents,
  createTestDatabase,
  deleteAmqpObjects,
  randomAmqpPrefix,
  waitFor,
  type TestDatabase,
  type TestQueue,
} from '@trips/testkit';
import { readConfig } from '../src/config.ts';
import { UNROUTABLE_RETRY_MS } from '../src/publish-pace.ts';
import { startRecorderService, type RecorderService } from '../src/service.ts';
import { drain, handRecorder, hostWrite, silent } from './helpers.ts';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));

let t: TestDatabase;
let prefix: string;
let queue: TestQueue;
let service: RecorderService | undefined;
const env = () => ({
  DATABASE_URL: t.url,
  AMQP_URL: amqpUrl,
  AMQP_PREFIX: prefix,
  RECORDER_HEALTH_PORT: '0',
  EVENT_GROUP_QUIET: '1s',
  EVENT_GROUP_MAX: '3s',
  LOG_LEVEL: 'silent',
});
beforeAll(async () => {
  t = await createTestDatabase();
  prefix = randomAmqpPrefix();
  queue = await collectEvents(prefix);
  await hostWrite(t.db, `INSERT INTO agencies (id, name) VALUES ('agy_P', 'Publishing')`);
});
afterAll(async () => {
  await service?.stop();
  await queue.close();
  await deleteAmqpObjects({ exchanges: [`${prefix}trips.events`, `${prefix}trips.events.express`] });
  await t.drop();
});

async function recordedIds(): Promise<string[]> {
  return (await t.db.selectFrom('events').select('id').orderBy('seq').execute()).map((e) => e.id);
}

test('events recorded while no publisher ran are published, with their ids, once one starts', async () => {
  // Recorded but never published: what a crash between the two leaves behind.
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_p1', 'agy_P', 'T', 3)`,
  );
  await drain(handRecorder(t.db));
  expect(await t.db.selectFrom('events_unpublished').select('id').execute()).toHaveLength(1);

  service = await startRecorderService(readConfig(env()), silent);
  const [id] = await recordedIds();
  await waitFor(() => queue.messages.length >= 1, { what: 'the message' });
  const [message] = queue.messages;
  expect(message).toMatchObject({
    routingKey: 'trip.created',
    messageId: id,
    type: 'trip.created',
    persistent: true,
    headers: { agency_id: 'agy_P' },
    body: {
      agency_id: 'agy_P',
      event: {
        object: 'event',
        id,
        type: 'trip.created',
        related_object: { type: 'trip', id: 'trp_p1', url: '/api/v1/trips/trp_p1' },
        data: {},
      },
    },
  });
  await waitFor(
    async () => (await t.db.selectFrom('events_unpublished').select('id').execute()).length === 0,
  );
});

test('every event the running service records is published once', async () => {
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) SELECT 'trp_many' || i, 'agy_P', 'T', 3 FROM generate_series(1, 200) i`,
  );
  await hostWrite(t.db, `UPDATE trips SET status = 'planning' WHERE id LIKE 'trp_many%'`);
  await waitFor(async () => (await recordedIds()).length === 401, { what: '401 events' });
  const ids = await recordedIds();
  await waitFor(() => queue.messages.length >= ids.length, { what: 'every message' });
  expect(queue.messages.map((m) => m.messageId)).toEqual(ids);
  const changed = queue.messages.find((m) => m.routingKey === 'trip.status_changed')!;
  expect((changed.body as { event: { data: unknown } }).event.data).toEqual({
    from: 'proposal',
    to: 'planning',
  });
});

test('/healthz answers, /readyz checks Postgres', async () => {
  const base = `http://127.0.0.1:${service!.healthPort}`;
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  const ready = await fetch(`${base}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toEqual({ status: 'ok' });
  expect((await fetch(`${base}/nope`)).status).toBe(404);
});

test('SIGTERM finishes the current batch and exits 0', async () => {
  await service!.stop();
  service = undefined;
  const child = spawn(process.execPath, [main], { env: { ...process.env, ...env(), LOG_LEVEL: 'info' } });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  await waitFor(() => output.includes('recorder started'), { what: 'start' });
  await hostWrite(
    t.db,
    `INSERT INTO trips (id, agency_id, title, num_days) SELECT 'trp_term' || i, 'agy_P', 'T', 3 FROM generate_series(1, 500) i`,
  );
  await waitFor(() => output.includes('batch recorded'), { what: 'a batch', intervalMs: 2 });
  child.kill('SIGTERM');
  const code = await new Promise((resolve) => child.on('exit', resolve));
  expect(code).toBe(0);
  expect(output).toContain('stopping gracefully');
  // Whatever the process claimed, it recorded whole: no change is lost or half-done.
  const outbox = await t.db.selectFrom('outbox').select('id').execute();
  const created = await t.db
    .selectFrom('events')
    .select('id')
    .where('object_id', 'like', 'trp_term%')
    .execute();
  expect(outbox.length + created.length).toBe(500);
});

test('an event no queue takes stays unpublished until a queue is bound, then arrives', async () => {
  // The only recorder now (the SIGTERM test stopped the others), on its own exchange with nothing
  // bound to it: a fresh broker before the dispatcher declared its queues.
  const alone = randomAmqpPrefix();
  const lonely = await startRecorderService(readConfig({ ...env(), AMQP_PREFIX: alone }), silent);
  try {
    await hostWrite(
      t.db,
      `INSERT INTO trips (id, agency_id, title, num_days) VALUES ('trp_unbound', 'agy_P', 'T', 3)`,
    );
    const event = await waitFor(
      () =>
        t.db
          .selectFrom('events')
          .select(['id', 'seq'])
          .where('object_id', '=', 'trp_unbound')
          .executeTakeFirst(),
      { what: 'the recorded event' },
    );
    const unpublished = () =>
      t.db.selectFrom('events_unpublished').select('seq').where('seq', '=', event.seq).executeTakeFirst();
    // Two tries of the publisher at least (a second apart): still unpublished, not confirmed into nowhere.
    await new Promise((resolve) => setTimeout(resolve, 2.5 * UNROUTABLE_RETRY_MS));
    expect(await unpublished()).toBeDefined();

    const late = await collectEvents(alone);
    try {
      await waitFor(() => late.messages.some((m) => m.messageId === event.id), { what: 'the late message' });
      await waitFor(async () => (await unpublished()) === undefined, { what: 'marked published' });
    } finally {
      await late.close();
    }
  } finally {
    await lonely.stop();
    await deleteAmqpObjects({ exchanges: [`${alone}trips.events`, `${alone}trips.events.express`] });
  }
});

test('a bad setting stops the start, naming the variable', () => {
  expect(() => readConfig({ EVENT_GROUP_QUIET: '5m', EVENT_GROUP_MAX: '1m' })).toThrow(/EVENT_GROUP_MAX/);
  expect(() => readConfig({ EVENT_RETENTION: 'soon' })).toThrow(/EVENT_RETENTION/);
});
