// What the Postgres failover test runs beside the services and reads of them: the host's writers,
// the API's paced readers and its /readyz, and, per fault, the figures it prints.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Activity, LocalPostgresReplica, TestReceiver } from '@trips/testkit';
import type { Replica } from './cluster.ts';
import type { RecordedEvent } from './invariants.ts';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const seconds = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : 'never');

/** Runs while `running()` holds: one change at a time, each refusal noted with its time. */
export async function write(activity: Activity, refused: number[], running: () => boolean): Promise<void> {
  while (running()) {
    try {
      await activity.step();
    } catch {
      refused.push(Date.now());
      await sleep(250);
    }
    await sleep(60 + Math.random() * 100);
  }
}

/** One API answer: when it was asked, its status ('no answer' when none came) and its Retry-After. */
export interface Answer {
  at: number;
  status: number | 'no answer';
  retryAfter: string | null;
}

export interface Reader {
  agencyId: string;
  key: string;
  seen: { id: string }[];
  answers: Answer[];
}

async function get(url: string, key?: string): Promise<{ answer: Answer; body?: any }> {
  const at = Date.now();
  try {
    const res = await fetch(url, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: AbortSignal.timeout(5_000),
    });
    const body = await res.json().catch(() => undefined);
    return { answer: { at, status: res.status, retryAfter: res.headers.get('retry-after') }, body };
  } catch {
    return { answer: { at, status: 'no answer', retryAfter: null } };
  }
}

/** Follows GET /events with the cursor, as an agency's integration would, paced at `everyMs`. */
export async function readEvents(reader: Reader, api: string, everyMs: number, running: () => boolean) {
  let cursor: string | undefined;
  while (running()) {
    const { answer, body } = await get(
      `${api}/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`,
      reader.key,
    );
    reader.answers.push(answer);
    if (answer.status === 200) {
      reader.seen.push(...body.data);
      cursor = body.next_cursor ?? cursor;
      if (body.has_more) continue;
    }
    await sleep(everyMs);
  }
}

/** Asks /readyz every `everyMs`; each answer kept. */
export async function probeReadiness(
  api: string,
  answers: Answer[],
  everyMs: number,
  running: () => boolean,
) {
  while (running()) {
    answers.push((await get(`${api}/readyz`)).answer);
    await sleep(everyMs);
  }
}

/** The longest run of answers other than 200 among `answers` within [from, to]. */
export function longestDown(answers: Answer[], from: number, to: number): number {
  let longest = 0;
  let downSince: number | undefined;
  for (const a of answers.filter((x) => x.at >= from && x.at <= to)) {
    if (a.status !== 200) downSince ??= a.at;
    else if (downSince !== undefined) {
      longest = Math.max(longest, a.at - downSince);
      downSince = undefined;
    }
  }
  if (downSince !== undefined) longest = Math.max(longest, to - downSince);
  return longest;
}

/** When each event was first delivered to `receiver` (a 2xx), by event id. */
function firstDeliveries(receiver: TestReceiver): Map<string, number> {
  const first = new Map<string, number>();
  for (const request of receiver.requests) {
    const id = String(request.headers['service-event-id']);
    if (!first.has(id)) first.set(id, request.at);
  }
  return first;
}

/**
 * From `from`, how long until the first delivery (to any of `receivers`) of an event recorded
 * after `from`: one that went all the way through the failover.
 */
export function resumedAfter(events: RecordedEvent[], receivers: TestReceiver[], from: number): number {
  const delivered = receivers.map(firstDeliveries);
  const times = events
    .filter((e) => e.created_at.getTime() > from)
    .flatMap((e) => delivered.map((d) => d.get(e.id)).filter((at): at is number => at !== undefined));
  return times.length ? Math.min(...times) - from : Infinity;
}

/**
 * The log lines of each replica at warn or above, grouped by message and loop or consumer, with the
 * largest number of them within any one fault: a loop that logs one line per outage logs one.
 */
export function outageLines(
  replicas: Replica[],
  faults: { from: number; to: number }[],
): { replica: string; line: string; total: number; mostInOneFault: number }[] {
  const rows = [];
  for (const replica of replicas) {
    const entries = replica
      .logs()
      .join('\n')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map(
        (l) =>
          JSON.parse(l) as { level: number; time: number; msg: string; loop?: string; consumer?: string },
      )
      .filter((e) => e.level >= 40);
    const byLine = new Map<string, number[]>();
    for (const e of entries) {
      const line = `${e.msg}${e.loop ? ` (loop ${e.loop})` : ''}${e.consumer ? ` (consumer ${e.consumer})` : ''}`;
      byLine.set(line, [...(byLine.get(line) ?? []), e.time]);
    }
    for (const [line, times] of byLine) {
      const perFault = faults.map((f) => times.filter((t) => t >= f.from && t <= f.to).length);
      rows.push({
        replica: replica.name,
        line,
        total: times.length,
        mostInOneFault: Math.max(0, ...perFault),
      });
    }
  }
  return rows;
}

/** The services' logs, the servers' and the proxy's, and the test's facts, kept for reading afterwards. */
export function keepEvidence(
  replicas: Replica[],
  postgres: LocalPostgresReplica,
  facts: Record<string, unknown>,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'trips-pg-failover-test-'));
  for (const r of replicas) r.saveLogs(dir);
  for (const [name, text] of Object.entries(postgres.logs())) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, 'facts.json'), JSON.stringify(facts, null, 1));
  return dir;
}
