// What the failover test reads of the world it made: which node each service is connected to, what
// the receiver saw of a fault, which events were recorded, confirmed and delivered, and, when it
// fails, the evidence it keeps for reading afterwards.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerAddress, connectToFirst, topology } from '@trips/broker';
import type { LocalRabbitCluster, QueueState, TestDatabase, TestReceiver } from '@trips/testkit';
import type { Replica } from './cluster.ts';

export interface FailoverWorld {
  t: TestDatabase;
  cluster: LocalRabbitCluster;
  receiver: TestReceiver;
  replicas: Replica[];
  prefix: string;
  delaysMs: number[];
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * The node (1–3) each service replica is connected to now, from its last 'connected to RabbitMQ'
 * line (a log line may arrive a moment after the fact: call it in waitFor).
 */
export function connectedNodes({ replicas, cluster }: FailoverWorld): number[] {
  return replicas.map((replica) => {
    const lines = replica
      .logs()
      .join('\n')
      .split('\n')
      .filter((l) => l.includes('"connected to RabbitMQ"'));
    const broker = lines.length ? (JSON.parse(lines.at(-1)!).broker as string) : undefined;
    return cluster.urls.findIndex((url) => brokerAddress(url) === broker) + 1; // 0: not yet
  });
}

/** When each event was first delivered (a 2xx), by event id. */
export function firstDeliveries({ receiver }: FailoverWorld): Map<string, number> {
  const first = new Map<string, number>();
  for (const request of receiver.requests) {
    const id = String(request.headers['service-event-id']);
    if (!first.has(id)) first.set(id, request.at);
  }
  return first;
}

/** Events recorded (committed) so far: id and time. */
export async function recorded({ t }: FailoverWorld): Promise<{ id: string; at: number }[]> {
  const rows = await t.db.selectFrom('events').select(['id', 'created_at']).orderBy('seq').execute();
  return rows.map((r) => ({ id: r.id, at: new Date(r.created_at as unknown as string).getTime() }));
}

/** Events the broker has confirmed (they left events_unpublished): the confirms to hold to their word. */
export async function confirmed(world: FailoverWorld): Promise<string[]> {
  const all = await recorded(world);
  const pending = new Set(
    (await world.t.db.selectFrom('events_unpublished').select('id').execute()).map((r) => r.id),
  );
  return all.map((e) => e.id).filter((id) => !pending.has(id));
}

export interface Fault {
  /** When the test began it (before the script ran). */
  from: number;
  /** When the node was gone (the script returned). */
  to: number;
}

export async function fault(action: () => Promise<void>): Promise<Fault> {
  const from = Date.now();
  await action();
  return { from, to: Date.now() };
}

/**
 * What the receivers saw of a fault, once the calm after it has passed. `pause`: the longest time
 * without any webhook arriving, from the fault's start. `resume`: from the node being gone to the
 * first delivery of an event recorded after that, so one that went all the way through the
 * failover (events recorded before may have been on their way already).
 */
export async function seen(
  world: FailoverWorld,
  { from, to }: Fault,
): Promise<{ pause: number; resume: number }> {
  const arrivals = world.receiver.requests.map((r) => r.at).filter((at) => at > from);
  const pause = Math.max(...[from, ...arrivals].map((at, i, all) => (all[i + 1] ?? Date.now()) - at));
  const first = firstDeliveries(world);
  const after = (await recorded(world))
    .filter((e) => e.at > to && first.has(e.id))
    .map((e) => first.get(e.id)!);
  return { pause, resume: after.length ? Math.min(...after) - to : Infinity };
}

export async function parkedCount({ cluster, prefix, delaysMs }: FailoverWorld): Promise<number> {
  const connection = await connectToFirst(cluster.urls, { timeout: 5_000 });
  try {
    const ch = await connection.createChannel();
    return (await ch.checkQueue(topology(prefix, delaysMs).parkedQueue)).messageCount;
  } finally {
    await connection.close().catch(() => {});
  }
}

export function membership(queues: QueueState[], prefix: string): string {
  return queues
    .map((q) => `${q.name.slice(prefix.length)}: ${q.online.length}/${q.members.length} online`)
    .join(', ');
}

/**
 * Where each undelivered event stands, kept with the services' logs and the queues' counts when the
 * test fails, so that a rare failure can be read afterwards rather than reproduced.
 */
export async function keepEvidence(
  world: FailoverWorld,
  undelivered: { id: string; at: number }[],
): Promise<string> {
  const { t, cluster, replicas, receiver } = world;
  const dir = mkdtempSync(join(tmpdir(), 'trips-failover-test-'));
  for (const r of replicas) r.saveLogs(dir);
  cluster.nodeLogs().forEach((text, i) => writeFileSync(join(dir, `rabbitmq-node${i + 1}.log`), text));
  const ids = undelivered.map((e) => e.id);
  const rows = async (table: 'events_unpublished' | 'webhook_attempts') =>
    ids.length
      ? t.db
          .selectFrom(table)
          .selectAll()
          .where(table === 'events_unpublished' ? 'id' : 'event_id', 'in', ids)
          .execute()
      : [];
  const held = await t.db.selectFrom('held_deliveries').selectAll().execute();
  const events = ids.length
    ? await t.db.selectFrom('events').selectAll().where('id', 'in', ids).execute()
    : [];
  const counts = await cluster
    .ctlJson([
      'list_queues',
      'name',
      'leader',
      'messages',
      'messages_ready',
      'messages_unacknowledged',
      'consumers',
    ])
    .catch((error: Error) => error.message);
  const evidence = {
    undelivered,
    events,
    unpublished: await rows('events_unpublished'),
    attempts: await rows('webhook_attempts'),
    held,
    queues: counts,
    requests: receiver.requests.map((r) => ({ id: r.headers['service-event-id'], at: r.at })),
  };
  writeFileSync(join(dir, 'evidence.json'), JSON.stringify(evidence, null, 1));
  return dir;
}
