import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@trips/testkit';
import { signWebhookForTest, type Event } from '../../packages/sdk/src/index.ts';
import { freePort } from '../system/cluster.ts';
import { insertTrip, setTripStatus, startStack, type Stack } from './stack.ts';

// The SDK's examples (issue 25, item 8), each run as its README runs it, a process of its own,
// against the real API and recorder: the Express receiver fed by `trips listen`, and the sync
// worker mirroring trips into Postgres across a restart.

const repo = fileURLToPath(new URL('../../', import.meta.url));
const secret = 'whsec_examples_test';
let stack: Stack;
let agency: Awaited<ReturnType<Stack['agency']>>;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  stack = await startStack();
  agency = await stack.agency();
  dir = await mkdtemp(join(tmpdir(), 'trips-examples-'));
}, 60_000);
afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
  await stack?.stop();
}, 30_000);

interface Running {
  child: ChildProcess;
  output: () => string;
  /** Sends SIGTERM and answers the exit code. */
  stop(): Promise<number | null>;
}

function start(script: string, env: Record<string, string>, args: string[] = []): Running {
  const child = spawn(process.execPath, [join(repo, script), ...args], {
    env: { ...process.env, TRIPS_API_KEY: agency.key, TRIPS_BASE_URL: stack.apiUrl, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    child,
    output: () => output,
    stop: async () => {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      return (await exited)[0] as number | null;
    },
  };
}

test('receiver-express: deliveries from `trips listen` verified, each event handled once with its trip read', async () => {
  const port = await freePort();
  const receiver = start('examples/receiver-express/server.js', {
    PORT: String(port),
    WEBHOOK_SECRET: secret,
    CURSOR_FILE: join(dir, 'receiver.cursor'),
  });
  await waitFor(() => receiver.output().includes('Receiving webhooks'), { what: 'the receiver to start' });
  const listen = start('packages/sdk/src/cli/main.ts', {}, [
    'listen',
    '--forward-to',
    `http://127.0.0.1:${port}/webhooks`,
    '--secret',
    secret,
    '--events',
    'trip.created',
  ]);
  await waitFor(() => listen.output().includes('Ready.'), { what: 'trips listen to start' });

  const titles = ['Algarve', 'Costa del Sol', 'St Andrews'];
  const ids: string[] = [];
  for (const title of titles) ids.push(await insertTrip(stack.db, agency.agencyId, title));
  await waitFor(() => titles.every((title) => receiver.output().includes(title)), {
    timeoutMs: 20_000,
    what: 'a line per trip, with the title read from the API',
  });
  // Each came twice: forwarded by listen (answered 200) and read by the cursor behind it, which
  // polls every 5 s. One line each: the second arrival was recognised.
  await new Promise((resolve) => setTimeout(resolve, 6_000));
  expect(listen.output().match(/→ 200/g)).toHaveLength(3);
  const lines = receiver
    .output()
    .split('\n')
    .filter((line) => line.includes('trip.created'));
  expect(lines).toHaveLength(3);

  // A delivery signed with another secret is refused, and nothing is handled.
  const event: Event = {
    object: 'event',
    id: 'evt_examples00000001',
    type: 'trip.created',
    created_at: new Date().toISOString(),
    related_object: { type: 'trip', id: ids[0]!, url: `/api/v1/trips/${ids[0]}` },
    data: {},
  };
  const forged = signWebhookForTest(event, 'whsec_someone_else');
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', ...forged });
  expect(res.status).toBe(400);
  expect(((await res.json()) as any).error.reason).toBe('no_matching_signature');

  expect(await listen.stop()).toBe(0);
  expect(await receiver.stop()).toBe(0);
  expect(receiver.output()).not.toMatch(/\n\s+at /); // no stack trace
}, 60_000);

test('sync-worker: trips mirrored into Postgres with the cursor there too; after a restart it catches up', async () => {
  const first = await insertTrip(stack.db, agency.agencyId, 'There before the worker');
  const env = { SYNC_DATABASE_URL: stack.t.url };
  const mirror = async () =>
    (await stack.db
      .selectFrom('trips_sync.trips' as never)
      .select(['id', 'status'] as never)
      .execute()) as unknown as { id: string; status: string }[];
  const statusOf = async (id: string) => (await mirror()).find((row) => row.id === id)?.status;

  let worker = start('examples/sync-worker/worker.js', env);
  await waitFor(() => worker.output().includes('Syncing trips'), { what: 'the worker to start' });
  expect(await statusOf(first)).toBe('proposal'); // the first run copied what was there
  const second = await insertTrip(stack.db, agency.agencyId, 'Made while it runs');
  await setTripStatus(stack.db, first, 'planning');
  await waitFor(async () => (await statusOf(first)) === 'planning' && (await statusOf(second)), {
    timeoutMs: 20_000,
    what: 'the new trip and the status change mirrored',
  });
  await stack.db.deleteFrom('trips').where('id', '=', second).execute();
  await waitFor(async () => (await statusOf(second)) === undefined, { what: 'the deleted trip gone' });
  expect(await worker.stop()).toBe(0);

  // While it is stopped, a trip comes and one changes; started again, it reads on from its cursor.
  const third = await insertTrip(stack.db, agency.agencyId, 'Made while it was stopped');
  await setTripStatus(stack.db, first, 'confirmed');
  worker = start('examples/sync-worker/worker.js', env);
  await waitFor(async () => (await statusOf(first)) === 'confirmed' && (await statusOf(third)), {
    timeoutMs: 20_000,
    what: 'the changes made while it was stopped',
  });
  expect(worker.output()).not.toContain('copied all'); // it went on from the cursor, no copy
  const mirrored = (await mirror()).map((row) => row.id);
  expect(mirrored).toEqual(expect.arrayContaining([first, third]));
  expect(mirrored).not.toContain(second);
  expect(await worker.stop()).toBe(0);
}, 60_000);
