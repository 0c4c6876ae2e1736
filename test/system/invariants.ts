// The invariants of the system test as pure functions of what was committed, recorded, delivered
// and read, so that each can be shown to fail on a broken input (invariants.test.ts) and the
// system test only gathers the facts. Every function answers violations (empty when it holds)
// and the counts the test prints.
import { isDeepStrictEqual } from 'node:util';
import { eventRecord } from '@trips/contracts';
import { verifySignature, type CommittedChange, type ReceivedRequest } from '@trips/testkit';

export interface RecordedEvent {
  seq: number;
  id: string;
  agency_id: string;
  type: string;
  object_type: 'trip' | 'payment' | 'contact';
  object_id: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** A span of time (ms since the epoch), e.g. a Postgres outage. */
export interface Span {
  from: number;
  to: number;
}

type Counts = Record<string, number>;

export interface Verdict {
  violations: string[];
  counts: Counts;
}

const MAX_LISTED = 5;
const listed = (items: string[]) =>
  items.slice(0, MAX_LISTED).join(', ') + (items.length > MAX_LISTED ? `, … (${items.length})` : '');
const iso = (ms: number) => new Date(ms).toISOString();
const canonical = (data: Record<string, unknown>) => JSON.stringify(Object.entries(data).sort());
/**
 * The same JSON value, key order aside. Through JSON first: objects that fetch parsed come from
 * another realm than jest's, and a deep-equal that compares prototypes tells them apart.
 */
const sameJson = (a: unknown, b: unknown) =>
  isDeepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));

// ---- 1. Every committed change has its events (interface.md section 6, D6) ---------------------

export interface GroupingRules {
  /** EVENT_GROUP_QUIET and EVENT_GROUP_MAX. */
  quietMs: number;
  maxMs: number;
  /**
   * How long before a batch a change may commit and still not be in it (claim to commit); a change
   * older than this was seen by any later batch.
   */
  slackMs: number;
  /** How late a due group may be recorded while the recorders can work. */
  lateMs: number;
  /** Spans in which no recorder could work (Postgres down)… */
  outages: Span[];
  /** …and how long after one the recorders may need to catch up (their back-off, then a batch). */
  recoveryMs: number;
}

/** Multiset difference: what `a` has that `b` lacks. */
function missingFrom(a: string[], b: string[]): string[] {
  const left = new Map<string, number>();
  for (const x of b) left.set(x, (left.get(x) ?? 0) + 1);
  return a.filter((x) => {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    return n === 0;
  });
}

/**
 * The immediate events of each agency's changes, exactly: the same events, each change's after the
 * previous change's (one writer per agency commits in order, and the record is in seq order).
 */
function checkImmediate(changes: CommittedChange[], events: RecordedEvent[]): string[] {
  const violations: string[] = [];
  const agencies = new Set([...changes.map((c) => c.agencyId), ...events.map((e) => e.agency_id)]);
  for (const agency of agencies) {
    const mine = changes.filter((c) => c.agencyId === agency);
    const recorded = events.filter((e) => e.agency_id === agency && !e.type.endsWith('.updated'));
    const key = (type: string, id: string, data: Record<string, unknown>) =>
      `${type} ${id} ${canonical(data)}`;
    const want = mine.flatMap((c) => c.events.map((e) => key(e.type, e.objectId, e.data)));
    const got = recorded.map((e) => key(e.type, e.object_id, e.data));
    const missing = missingFrom(want, got);
    const extra = missingFrom(got, want);
    if (missing.length)
      violations.push(`${agency}: ${missing.length} events not recorded: ${listed(missing)}`);
    if (extra.length) violations.push(`${agency}: ${extra.length} events no change made: ${listed(extra)}`);
    if (missing.length || extra.length) continue;
    let i = 0;
    for (const change of mine) {
      const expected = change.events.map((e) => key(e.type, e.objectId, e.data)).sort();
      const actual = got.slice(i, i + expected.length).sort();
      i += expected.length;
      if (!isDeepStrictEqual(expected, actual)) {
        violations.push(
          `${agency}: the events of ${change.action} at ${change.at.toISOString()} are out of order: [${actual.join('; ')}]`,
        );
        break;
      }
    }
  }
  return violations;
}

/** When a group due at `due` must be recorded by, allowing for recorder outages. */
function deadline(due: number, rules: GroupingRules): number {
  let by = due + rules.lateMs;
  for (const o of rules.outages) {
    if (due <= o.to + rules.recoveryMs && by >= o.from) by = Math.max(by, o.to + rules.recoveryMs);
  }
  return by;
}

/**
 * The grouped `*.updated` events of one object against its changes (spec 6 rule 1, D6):
 * - each event has a change since the previous event (none is made from nothing);
 * - none comes before its group is due: quiet for EVENT_GROUP_QUIET since the last change, or
 *   EVENT_GROUP_MAX since the first (so edits in a run group into one);
 * - none comes later than due (plus lateness, or the recovery after an outage);
 * - every change is followed by an event, unless a deletion came first (D6: it supersedes the
 *   group) while the group was not yet due.
 */
function checkGroupedObject(
  object: string,
  touches: number[],
  deletions: number[],
  updates: number[],
  rules: GroupingRules,
): string[] {
  const { quietMs, maxMs, slackMs } = rules;
  const violations: string[] = [];
  updates.forEach((r, j) => {
    const previous = j > 0 ? updates[j - 1]! : -Infinity;
    // A deletion its batch had seen dropped whatever was pending then (D6): only later changes
    // count. One committed within the slack before it may have missed that batch, as any change may.
    const deleted = Math.max(-Infinity, ...deletions.filter((d) => d < r - slackMs));
    const since = touches.filter((t) => t > Math.max(previous - slackMs, deleted) && t <= r);
    if (!since.length) {
      violations.push(`${object}: an update event at ${iso(r)} with no change before it`);
      return;
    }
    const seen = since.filter((t) => t <= r - slackMs);
    const earliest = seen.length
      ? Math.min(Math.max(...seen) + quietMs, Math.min(...since) + maxMs)
      : Infinity;
    if (r < earliest - slackMs) {
      violations.push(
        `${object}: an update event at ${iso(r)} before its group was due (changes at ${since.map(iso).join(', ')})`,
      );
    }
    const after = touches.filter((t) => t > Math.max(previous, deleted) && t <= r);
    const last = Math.max(...since);
    const due = Math.min(last + quietMs, (after.length ? Math.min(...after) : last) + maxMs);
    if (r > deadline(due, rules)) {
      violations.push(
        `${object}: an update event at ${iso(r)}, due at ${iso(due)}, came too late (changes at ${since.map(iso).join(', ')})`,
      );
    }
  });
  for (const t of touches) {
    if (updates.some((r) => r >= t)) continue;
    const deletion = deletions.find((d) => d > t);
    if (deletion === undefined) {
      violations.push(`${object}: the change at ${iso(t)} never made an update event`);
      continue;
    }
    const last = Math.max(...touches.filter((x) => x >= t && x < deletion));
    if (deletion > deadline(last + quietMs, rules)) {
      violations.push(
        `${object}: the change at ${iso(t)} made no update event, though its group was due before the deletion at ${iso(deletion)}`,
      );
    }
  }
  return violations;
}

export function checkRecording(
  changes: CommittedChange[],
  events: RecordedEvent[],
  rules: GroupingRules,
): Verdict {
  const violations = checkImmediate(changes, events);
  const touches = new Map<string, number[]>();
  const deletions = new Map<string, number[]>();
  const updates = new Map<string, number[]>();
  const add = (map: Map<string, number[]>, key: string, at: number) =>
    map.set(key, [...(map.get(key) ?? []), at]);
  for (const change of changes) {
    for (const o of change.touched) add(touches, `${o.type}:${o.id}`, change.at.getTime());
    for (const o of change.deleted) add(deletions, `${o.type}:${o.id}`, change.at.getTime());
  }
  for (const e of events) {
    if (e.type.endsWith('.updated')) add(updates, `${e.object_type}:${e.object_id}`, e.created_at.getTime());
  }
  const objects = new Set([...touches.keys(), ...updates.keys()]);
  let merged = 0;
  for (const object of objects) {
    const t = (touches.get(object) ?? []).sort((a, b) => a - b);
    const u = (updates.get(object) ?? []).sort((a, b) => a - b);
    merged += Math.max(0, t.length - u.length);
    violations.push(
      ...checkGroupedObject(
        object,
        t,
        (deletions.get(object) ?? []).sort((a, b) => a - b),
        u,
        rules,
      ),
    );
  }
  const types = new Set(events.map((e) => e.type));
  return {
    violations,
    counts: {
      'changes committed': changes.length,
      'events recorded': events.length,
      'immediate events': events.filter((e) => !e.type.endsWith('.updated')).length,
      'grouped edits': [...touches.values()].reduce((n, t) => n + t.length, 0),
      'update events': [...updates.values()].reduce((n, u) => n + u.length, 0),
      'edits grouped into another': merged,
      'event types seen': types.size,
      'template conversions': changes.filter((c) => c.action === 'template.convert').length,
      'trips made templates': changes.filter((c) => c.action === 'trip.to_template').length,
    },
  };
}

// ---- 2. Every event reached every subscribed, active webhook of its agency, and no other -------

export interface WebhookUnderTest {
  name: string;
  id: string;
  agencyId: string;
  eventTypes: string[];
  secret: string;
  /** Active at the end: it must have had every event of its types. */
  active: boolean;
  /** When it stopped being active (switched off by the policy, or by its owner). */
  offAt?: number;
  /** Every request it got, and whether it answered 2xx in time (a delivery). */
  requests: { request: ReceivedRequest; delivered: boolean }[];
}

export function checkDeliveries(
  webhooks: WebhookUnderTest[],
  events: RecordedEvent[],
  /** A request may still arrive this long after the switch-off (an attempt already under way). */
  graceMs: number,
): Verdict {
  const violations: string[] = [];
  const byId = new Map(events.map((e) => [e.id, e]));
  const counts: Counts = {};
  for (const w of webhooks) {
    const problems = { signature: [] as string[], foreign: [] as string[], unsubscribed: [] as string[] };
    const body: string[] = [];
    const late: string[] = [];
    const delivered = new Set<string>();
    let deliveredRequests = 0;
    for (const { request, delivered: ok } of w.requests) {
      const id = String(request.headers['service-event-id']);
      if (!verifySignature(request, w.secret)) problems.signature.push(id);
      const event = byId.get(id);
      if (!event) {
        problems.foreign.push(`${id} (unknown)`);
        continue;
      }
      if (event.agency_id !== w.agencyId) problems.foreign.push(`${id} of ${event.agency_id}`);
      if (!w.eventTypes.includes(event.type)) problems.unsubscribed.push(`${id} (${event.type})`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(request.body);
      } catch {
        parsed = undefined;
      }
      if (!sameJson(parsed, eventRecord(event)) || request.headers['service-event-type'] !== event.type)
        body.push(id);
      if (w.offAt !== undefined && request.at > w.offAt + graceMs) late.push(`${id} at ${iso(request.at)}`);
      if (ok) {
        delivered.add(id);
        deliveredRequests++;
      }
    }
    if (problems.signature.length)
      violations.push(
        `${w.name}: ${problems.signature.length} bad signatures: ${listed(problems.signature)}`,
      );
    if (problems.foreign.length)
      violations.push(
        `${w.name}: ${problems.foreign.length} events of another agency: ${listed(problems.foreign)}`,
      );
    if (problems.unsubscribed.length)
      violations.push(
        `${w.name}: ${problems.unsubscribed.length} unsubscribed: ${listed(problems.unsubscribed)}`,
      );
    if (body.length)
      violations.push(`${w.name}: ${body.length} bodies differ from the event record: ${listed(body)}`);
    if (late.length) violations.push(`${w.name}: ${late.length} requests after it was off: ${listed(late)}`);
    const owed = events.filter((e) => e.agency_id === w.agencyId && w.eventTypes.includes(e.type));
    const missing = w.active
      ? owed.filter((e) => !delivered.has(e.id)).map((e) => `${e.id} (${e.type})`)
      : [];
    if (missing.length)
      violations.push(
        `${w.name}: ${missing.length} of ${owed.length} events never delivered: ${listed(missing)}`,
      );
    if (!w.active && w.offAt === undefined && w.requests.length)
      violations.push(`${w.name}: disabled from the start, yet got ${w.requests.length} requests`);
    counts[`${w.name}: requests`] = w.requests.length;
    counts[`${w.name}: events owed`] = w.active ? owed.length : 0;
    counts[`${w.name}: events delivered`] = delivered.size;
    counts[`${w.name}: duplicate deliveries`] = deliveredRequests - delivered.size;
  }
  return { violations, counts };
}

// ---- 3. A GET /events reader saw every event exactly once, in cursor order ---------------------

export function checkReader(
  agencyId: string,
  seen: { id: string; [field: string]: unknown }[],
  events: RecordedEvent[],
): Verdict {
  const violations: string[] = [];
  const mine = events.filter((e) => e.agency_id === agencyId);
  const byId = new Map(events.map((e) => [e.id, e]));
  const ids = seen.map((e) => e.id);
  const duplicates = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (duplicates.length)
    violations.push(`${agencyId} reader: ${duplicates.length} seen twice: ${listed(duplicates)}`);
  const foreign = seen.filter((e) => byId.get(e.id)?.agency_id !== agencyId).map((e) => e.id);
  if (foreign.length)
    violations.push(`${agencyId} reader: ${foreign.length} not its agency's: ${listed(foreign)}`);
  const seenIds = new Set(ids);
  const missing = mine.filter((e) => !seenIds.has(e.id)).map((e) => e.id);
  if (missing.length) violations.push(`${agencyId} reader: ${missing.length} never seen: ${listed(missing)}`);
  const seqs = seen.map((e) => byId.get(e.id)?.seq ?? NaN);
  const backwards = seqs.findIndex((s, i) => i > 0 && !(s > seqs[i - 1]!));
  if (backwards > 0) violations.push(`${agencyId} reader: out of cursor order at ${ids[backwards]}`);
  const differing = seen.filter((e) => byId.has(e.id) && !sameJson(e, eventRecord(byId.get(e.id)!)));
  if (differing.length) {
    const first = differing[0]!;
    violations.push(
      `${agencyId} reader: ${differing.length} items differ from the record, e.g. ${JSON.stringify(first)} for ${JSON.stringify(eventRecord(byId.get(first.id)!))}`,
    );
  }
  return { violations, counts: { seen: seen.length, 'seen twice': duplicates.length } };
}

// ---- 4. No 500 outside the Postgres outage -------------------------------------------------------

/** The API's access log lines (pino JSON) answered with a 5xx, each checked against the outages. */
export function checkServerErrors(logs: string[], outages: Span[], graceMs: number): Verdict {
  const violations: string[] = [];
  let inside = 0;
  let requests = 0;
  for (const text of logs) {
    for (const line of text.split('\n')) {
      if (!line.includes('"msg":"request"')) continue;
      const entry = JSON.parse(line) as { time: number; status: number; path: string; requestId: string };
      requests++;
      if (entry.status < 500) continue;
      if (outages.some((o) => entry.time >= o.from && entry.time <= o.to + graceMs)) inside++;
      else violations.push(`${entry.status} for ${entry.path} at ${iso(entry.time)} (${entry.requestId})`);
    }
  }
  return {
    violations: violations.length
      ? [`${violations.length} answers 5xx outside the outage: ${listed(violations)}`]
      : [],
    counts: { 'API requests': requests, '5xx in the outage': inside, '5xx outside it': violations.length },
  };
}
