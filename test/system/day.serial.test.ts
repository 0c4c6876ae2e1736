import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { topology } from '@trips/broker';
import { EVENT_TYPE_NAMES } from '@trips/contracts';
import { createApiKey } from '@trips/db/api-keys';
import { listOwnerEmails } from '@trips/db/users';
import { createWebhook, findWebhook, setWebhookEnabled } from '@trips/db/webhooks';
import {
  onAmqpChannel,
  createActivity,
  createTestCa,
  createTestDatabase,
  LocalPostgresReplica,
  LocalRabbitCluster,
  postgresInstalled,
  rabbitmqInstalled,
  randomAmqpPrefix,
  startReceiver,
  startSmtp,
  type Activity,
  type TestCa,
  type TestDatabase,
  type TestReceiver,
  type TestSmtp,
  waitFor,
} from '@trips/testkit';
import { agencyWithOwners } from '../../services/dispatcher/test/support.ts';
import { freePort, Replica, startAll, type Exit, type ServiceName } from './cluster.ts';
import {
  checkDeliveries,
  checkReader,
  checkRecording,
  checkServerErrors,
  type RecordedEvent,
  type Span,
  type Verdict,
  type WebhookUnderTest,
} from './invariants.ts';

// Issue 7: a compressed day of a few agencies, the three services as separate processes (two of
// each), webhooks that succeed, fail for a while, time out, redirect, and one that stays down until
// it is switched off, while every service is killed with -9 and restarted, RabbitMQ restarts and
// Postgres restarts. Then the invariants (invariants.ts) and their counts. The RabbitMQ and the
// Postgres are the test's own, a node and a server started for it from the machine's installations
// and removed afterwards (the machine's are never stopped: other runs share them); without those
// installations (services in containers) the test is skipped, saying so. Serial: its processes take
// the machine's cores. Run it alone under the heavy-runs lock:
//   flock /tmp/trips-heavy.lock bash scripts/test.sh test/system/day.serial.test.ts

// D9 in seconds: the grouping window, retries, answer time. The failure window stays above the
// dispatcher's circuit-breaker cooldown (30 s, not a setting): a shorter one would switch off an
// endpoint that recovered while its breaker was still open.
const QUIET_MS = 2_000;
const MAX_MS = 5_000;
const TIMEOUT_MS = 2_000;
const FAILURE_WINDOW_MS = 45_000;
const RETRY_DELAYS = '1s,2s';
/** The activity lasts this long; the faults and the endpoints' moods are placed within it. */
const DAY_MS = 70_000;

const SETTINGS = {
  EVENT_GROUP_QUIET: `${QUIET_MS}ms`,
  EVENT_GROUP_MAX: `${MAX_MS}ms`,
  WEBHOOK_TIMEOUT: `${TIMEOUT_MS}ms`,
  WEBHOOK_RETRY_DELAYS: RETRY_DELAYS,
  WEBHOOK_FAILURE_WINDOW: `${FAILURE_WINDOW_MS}ms`,
  LOG_LEVEL: 'info',
};

type Mood = 'ok' | 'fail' | 'timeout' | 'redirect';

interface Endpoint extends WebhookUnderTest {
  receiver: TestReceiver;
  mood: Mood;
}

interface Reader {
  agencyId: string;
  key: string;
  seen: { id: string; related_object: { url: string } }[];
  statuses: Map<string, number>;
  objectReads: Map<string, number>;
}

const runnable = rabbitmqInstalled && postgresInstalled;
if (!runnable)
  console.warn(
    `system day test skipped: no ${rabbitmqInstalled ? 'PostgreSQL 15' : 'RabbitMQ'} installed on this machine`,
  );

let ca: TestCa;
let smtp: TestSmtp;
let broker: LocalRabbitCluster;
let postgres: LocalPostgresReplica;
let t: TestDatabase;
let prefix: string;
const replicas: Replica[] = [];
const endpoints: Endpoint[] = [];
/** Brings the stopped broker or database back; afterAll runs what is left, whatever happened. */
const restore = new Set<() => Promise<void>>();
/** The writers run while this holds, the readers while `reading` does. */
let writing = true;
let reading = true;

beforeAll(async () => {
  if (!runnable) return;
  [ca, smtp, broker, postgres] = await Promise.all([
    createTestCa(),
    startSmtp(),
    LocalRabbitCluster.up({ nodes: 1 }),
    LocalPostgresReplica.up({ single: true }),
  ]);
  t = await createTestDatabase(postgres.url);
  prefix = randomAmqpPrefix();
}, 240_000);

afterAll(async () => {
  writing = false;
  reading = false;
  for (const bringBack of restore) await bringBack().catch((error) => console.error(error));
  await Promise.all(replicas.map((r) => r.cleanup()));
  await Promise.all(endpoints.map((e) => e.receiver.close()));
  await smtp?.close();
  await t?.drop();
  await broker?.down();
  await postgres?.down();
}, 240_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check` holds or the time is up; answers whether it held (the checks say what did not). */
const settle = (check: () => Promise<boolean> | boolean, timeoutMs: number) =>
  waitFor(check, { timeoutMs, intervalMs: 250 }).then(
    () => true,
    () => false,
  );

async function endpoint(
  name: string,
  agencyId: string,
  eventTypes: string[],
  redirectTo?: () => string,
): Promise<Endpoint> {
  const receiver = await startReceiver(ca);
  const { webhook, secret } = await createWebhook(t.db, { agencyId, url: receiver.url, eventTypes });
  const e: Endpoint = {
    name,
    id: webhook.id,
    agencyId,
    eventTypes,
    secret,
    active: true,
    requests: [],
    receiver,
    mood: 'ok',
  };
  receiver.answer = (request) => {
    const mood = e.mood;
    e.requests.push({ request, delivered: mood === 'ok' });
    if (mood === 'fail') return { status: 500, body: 'down for maintenance' };
    // Answers, but only after the dispatcher stopped waiting.
    if (mood === 'timeout') return { status: 200, delayMs: TIMEOUT_MS + 1_000 };
    // To another agency's endpoint: were it followed, that agency would get this one's events.
    if (mood === 'redirect') return { status: 307, headers: { location: redirectTo!() } };
    return { status: 204 };
  };
  endpoints.push(e);
  return e;
}

/** Reads GET /events as an agency's integration would, from both API replicas in turn. */
async function readEvents(reader: Reader, apis: string[]): Promise<void> {
  let cursor: string | undefined;
  let turn = 0;
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const get = async (path: string) => {
    const base = apis[turn++ % apis.length]!;
    const res = await fetch(`${base}${path}`, {
      headers: { authorization: `Bearer ${reader.key}` },
      signal: AbortSignal.timeout(5_000),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
  };
  while (reading) {
    let more = false;
    try {
      const { status, body } = await get(`/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`);
      count(reader.statuses, String(status));
      if (status === 200) {
        reader.seen.push(...body.data);
        cursor = body.next_cursor;
        more = body.has_more;
        // Now and then read the object an event names, as a receiver should (spec 6 rule 5).
        for (const event of body.data.filter(() => Math.random() < 0.1)) {
          const { status: objectStatus } = await get(event.related_object.url);
          count(reader.objectReads, String(objectStatus));
        }
      }
    } catch (error) {
      count(reader.statuses, (error as Error).name === 'TimeoutError' ? 'timeout' : 'no answer');
    }
    if (!more) await sleep(250);
  }
}

async function write(activity: Activity, errors: { at: number; message: string }[]): Promise<void> {
  while (writing) {
    try {
      await activity.step();
    } catch (error) {
      errors.push({ at: Date.now(), message: (error as Error).message });
      await sleep(250);
    }
    await sleep(60 + Math.random() * 190);
  }
}

function table(title: string, rows: [string, string | number][]): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return [`${title}`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n');
}

(runnable ? test : test.skip)(
  'a compressed day: every change has its events, delivered and readable, through crashes and restarts',
  async () => {
    const started = Date.now();
    const facts: [string, string | number][] = [];

    // ---- Agencies, keys, webhooks ----
    const agencies = await Promise.all(
      ['Fairway Golf Travel', 'Links & Legends', 'Birdie Breaks', 'Bogey Tours'].map((name) =>
        agencyWithOwners(t.db, name),
      ),
    );
    const [a, b, c, d] = agencies.map((x) => x.agencyId) as [string, string, string, string];
    const all = [...EVENT_TYPE_NAMES];
    const allOk = await endpoint('A ok', a, all);
    const flaky = await endpoint('A flaky', a, all);
    await endpoint(
      'B trips only',
      b,
      all.filter((type) => type.startsWith('trip.')),
    );
    const slow = await endpoint(
      'B times out',
      b,
      all.filter((type) => !type.startsWith('trip.')),
    );
    const redirecting = await endpoint('C redirects', c, all, () => allOk.receiver.url);
    const disabled = await endpoint('C disabled', c, all);
    await setWebhookEnabled(t.db, disabled.id, false);
    disabled.active = false;
    await endpoint('D ok', d, all);
    const down = await endpoint('D down', d, all);
    down.mood = 'fail';
    const scopes = ['trips:read', 'payments:read', 'contacts:read', 'events:read'];
    const readers: Reader[] = await Promise.all(
      agencies.map(async ({ agencyId }) => ({
        agencyId,
        key: (await createApiKey(t.db, { agencyId, scopes })).key,
        seen: [],
        statuses: new Map(),
        objectReads: new Map(),
      })),
    );

    // ---- Two replicas of each service; dispatchers first, as they declare the queues ----
    const common = { ...SETTINGS, DATABASE_URL: t.url, AMQP_URL: broker.urls[0]!, AMQP_PREFIX: prefix };
    const own: Record<ServiceName, (port: number, metricsPort: number) => Record<string, string>> = {
      dispatcher: (port) => ({
        DISPATCHER_HEALTH_PORT: String(port),
        WEBHOOK_CA_FILE: ca.caFile,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
        DISPATCHER_STOP_TIMEOUT: '5s',
        SMTP_URL: smtp.url,
        SETTINGS_URL: 'https://trips.example/settings',
      }),
      recorder: (port) => ({
        RECORDER_HEALTH_PORT: String(port),
        RECORDER_PUBLISH_TIMEOUT: '3s',
        RECORDER_STOP_TIMEOUT: '5s',
      }),
      api: (port, metricsPort) => ({
        PORT: String(port),
        API_METRICS_PORT: String(metricsPort),
        API_SHUTDOWN_DEADLINE: '5s',
      }),
    };
    for (const service of ['dispatcher', 'recorder', 'api'] as const) {
      for (const n of [1, 2]) {
        const port = await freePort();
        const env = { ...common, ...own[service](port, await freePort()) };
        replicas.push(new Replica(service, `${service}-${n}`, env, port));
      }
    }
    const apiUrls = replicas.filter((r) => r.service === 'api').map((r) => r.readyUrl.replace('/readyz', ''));
    await startAll(replicas);
    const [dispatcher1, dispatcher2, recorder1, recorder2, api1, api2] = replicas as Replica[] as [
      Replica,
      Replica,
      Replica,
      Replica,
      Replica,
      Replica,
    ];
    facts.push(['start-up (s)', ((Date.now() - started) / 1000).toFixed(1)]);

    // ---- The day: writers, readers, and the faults on a timeline ----
    const activities = agencies.map(({ agencyId }) => createActivity(t.db, { agencyId }));
    const writeErrors: { at: number; message: string }[] = [];
    const writers = activities.map((activity) => write(activity, writeErrors));
    const readersDone = readers.map((reader) => readEvents(reader, apiUrls));
    const day = Date.now();
    const at = async (ms: number) => sleep(day + ms - Date.now());
    const pgOutages: Span[] = [];
    const faults: string[] = [];
    /** Down for `ms`, then back; `restore` keeps the way back for afterAll until it is taken. */
    const outage = async (stop: () => Promise<() => Promise<void>>, ms: number) => {
      const from = Date.now();
      const start = await stop();
      restore.add(start);
      await sleep(ms);
      await start();
      restore.delete(start);
      return { from, to: Date.now() };
    };
    const crash = (replica: Replica) => async () => {
      await replica.crashAndRestart();
      return `kill -9 ${replica.name}`;
    };
    const mood = (endpoint: Endpoint, next: Mood) => async () => {
      endpoint.mood = next;
    };
    const timeline: [at: number, step: () => Promise<string | void>][] = [
      [5_000, crash(recorder1)],
      [8_000, mood(flaky, 'fail')],
      [10_000, crash(dispatcher1)],
      [13_000, mood(flaky, 'ok')],
      [15_000, crash(api1)],
      [16_000, mood(slow, 'timeout')],
      [21_000, mood(slow, 'ok')],
      [22_000, async () => (await outage(() => broker.stopApp(1), 3_000), 'RabbitMQ restart')],
      [28_000, mood(redirecting, 'redirect')],
      [33_000, mood(redirecting, 'ok')],
      [
        36_000,
        async () => {
          const span = { from: Date.now(), to: Infinity };
          pgOutages.push(span); // a 500 while it is down is expected, even before the restart returns
          span.to = (await outage(() => postgres.stop(1), 3_000)).to;
          return `Postgres restart (${((span.to - span.from) / 1000).toFixed(1)} s down)`;
        },
      ],
      [48_000, crash(recorder2)],
      [52_000, crash(dispatcher2)],
      [56_000, crash(api2)],
    ];
    for (const [ms, step] of timeline) {
      await at(ms);
      const fault = await step();
      if (fault) faults.push(fault);
    }
    await at(DAY_MS);
    writing = false;
    await Promise.all(writers);
    for (const activity of activities) await activity.settle();
    const changes = activities.flatMap((x) => x.committed);
    facts.push(['activity (s)', ((Date.now() - day) / 1000).toFixed(1)]);

    // ---- Let everything settle (bounded); whatever did not is reported by the checks ----
    const settling = Date.now();
    const empty = async (table: 'outbox' | 'event_groups' | 'events_unpublished') =>
      (await t.db.selectFrom(table).selectAll().limit(1).execute()).length === 0;
    const recorded = await settle(
      async () =>
        (await empty('outbox')) && (await empty('event_groups')) && (await empty('events_unpublished')),
      30_000,
    );
    const loadEvents = () =>
      t.db.selectFrom('events').selectAll().orderBy('seq').execute() as Promise<RecordedEvent[]>;
    let events = await loadEvents();
    const downRow = () => findWebhook(t.db, down.id);
    const delivered = await settle(async () => {
      const owed = (e: Endpoint) =>
        events.filter((x) => x.agency_id === e.agencyId && e.eventTypes.includes(x.type)).map((x) => x.id);
      const deliveredTo = (e: Endpoint) =>
        new Set(e.requests.filter((r) => r.delivered).map((r) => r.request.headers['service-event-id']));
      return (
        readers.every((r) => r.seen.length >= events.filter((x) => x.agency_id === r.agencyId).length) &&
        endpoints
          .filter((e) => e.active && e !== down)
          .every((e) => owed(e).every((id) => deliveredTo(e).has(id))) &&
        !!(await downRow())?.disabled_at
      );
    }, 90_000);
    const owners = await listOwnerEmails(t.db, d);
    await settle(
      () => owners.every((o) => smtp.mails.some((m) => m.to.includes(o) && /switched off/i.test(m.subject))),
      15_000,
    );
    facts.push(['settling (s)', ((Date.now() - settling) / 1000).toFixed(1)]);
    reading = false;
    await Promise.all(readersDone);

    // ---- Every process stops cleanly on SIGTERM ----
    const exits: [string, Exit | undefined][] = await Promise.all(
      replicas.map(async (r) => [r.name, await r.stop()] as [string, Exit | undefined]),
    );
    events = await loadEvents();
    const parked = await onAmqpChannel(
      async (channel) => (await channel.checkQueue(topology(prefix, []).parkedQueue)).messageCount,
      broker.urls[0],
    );

    // ---- The invariants ----
    const downAtEnd = (await downRow())!;
    down.active = false;
    down.offAt = downAtEnd.disabled_at ? new Date(downAtEnd.disabled_at).getTime() : undefined;
    const verdicts: [string, Verdict][] = [];
    verdicts.push([
      'changes → events (section 6, grouping)',
      checkRecording(changes, events, {
        quietMs: QUIET_MS,
        maxMs: MAX_MS,
        slackMs: 500,
        lateMs: 3_000,
        outages: pgOutages,
        recoveryMs: 10_000,
      }),
    ]);
    const madeTypes = new Set(
      changes.flatMap((x) => [...x.events.map((e) => e.type), ...x.touched.map((o) => `${o.type}.updated`)]),
    );
    const conversions = changes.filter((x) => x.action === 'template.convert').length;
    verdicts.push([
      'the day covered',
      {
        violations: [
          ...(madeTypes.size === EVENT_TYPE_NAMES.length
            ? []
            : [`event types never made: ${all.filter((x) => !madeTypes.has(x))}`]),
          ...(conversions > 0 ? [] : ['no template was turned into a trip']),
        ],
        counts: {},
      },
    ]);
    verdicts.push([
      'webhooks (at least once, signed, own agency only)',
      checkDeliveries(endpoints, events, TIMEOUT_MS + 2_000),
    ]);
    for (const reader of readers)
      verdicts.push([
        `GET /events reader of ${reader.agencyId}`,
        checkReader(reader.agencyId, reader.seen as never, events),
      ]);
    const switchOffMails = smtp.mails.filter((m) => /switched off/i.test(m.subject));
    verdicts.push([
      'switch-off',
      {
        violations: [
          ...(downAtEnd.disabled_reason === 'failing'
            ? []
            : [`D down was not switched off by the policy (${downAtEnd.disabled_reason})`]),
          // The epoch moves at every switch-off: 1 at creation, 2 after exactly one.
          ...(downAtEnd.epoch === 2 ? [] : [`D down was switched off ${downAtEnd.epoch - 1} times`]),
          ...owners.flatMap((o) => {
            const n = switchOffMails.filter((m) => m.to.includes(o)).length;
            return n === 1 ? [] : [`owner ${o} got ${n} switch-off e-mails`];
          }),
          ...(switchOffMails.every((m) => m.to.every((to) => owners.includes(to)))
            ? []
            : ['a switch-off e-mail went to someone else']),
        ],
        counts: {
          'switch-off e-mails': switchOffMails.length,
          'warning e-mails': smtp.mails.length - switchOffMails.length,
        },
      },
    ]);
    verdicts.push([
      'API answers',
      checkServerErrors(
        replicas.filter((r) => r.service === 'api').flatMap((r) => r.logs()),
        pgOutages,
        1_000,
      ),
    ]);
    const lostBroker = replicas.filter((r) =>
      r.logs().some((log) => log.includes('disconnected from RabbitMQ')),
    );
    verdicts.push([
      'processes',
      {
        violations: [
          // A replica with nothing running at the end crashed: its unexpected exit says so below.
          ...exits
            .filter(([, e]) => e && e.code !== 0)
            .map(([name, e]) => `${name} did not stop cleanly on SIGTERM: ${JSON.stringify(e)}`),
          ...replicas.flatMap((r) =>
            r.unexpectedExits().map((e) => `${r.name} exited by itself (${e.code ?? e.signal}): ${e.cause}`),
          ),
          ...(parked === 0 ? [] : [`${parked} messages parked`]),
          ...(recorded ? [] : ['the recorders did not finish within 30 s of the last write']),
          ...(delivered ? [] : ['deliveries and readers did not finish within 90 s']),
          // The host's own writes fail only while Postgres is down (a failure elsewhere is a bug in
          // the activity's model, or the database refusing a valid write).
          ...writeErrors
            .filter((e) => !pgOutages.some((o) => e.at >= o.from && e.at <= o.to + 1_000))
            .map((e) => `a write failed outside the outage: ${e.message}`),
          // The outages were real: the services lost the broker, and the host's writes were refused.
          ...(lostBroker.length ? [] : ['no service logged losing RabbitMQ in its restart']),
          ...(writeErrors.length ? [] : ['no write was refused while Postgres was down']),
        ],
        counts: {
          ...Object.fromEntries(replicas.map((r) => [`${r.name} restarts`, r.restarts])),
          'replicas that lost RabbitMQ': lostBroker.length,
        },
      },
    ]);

    // ---- The report ----
    // A few of each kind say what broke; hundreds more of the same would only bury the others.
    const violations = verdicts.flatMap(([name, v]) => [
      ...v.violations.slice(0, 8).map((x) => `${name}: ${x}`),
      ...(v.violations.length > 8 ? [`${name}: … and ${v.violations.length - 8} more`] : []),
    ]);
    facts.push(['faults', faults.join('; ')]);
    facts.push(['activity seeds', activities.map((x) => x.seed).join(', ')]);
    facts.push(['writes refused (Postgres down)', writeErrors.length]);
    facts.push(['total (s)', ((Date.now() - started) / 1000).toFixed(1)]);
    const readerStatuses = new Map<string, number>();
    for (const r of readers)
      for (const [k, v] of [
        ...r.statuses,
        ...[...r.objectReads].map(([s, n]) => [`object ${s}`, n] as const),
      ])
        readerStatuses.set(k, (readerStatuses.get(k) ?? 0) + v);
    console.log(
      [
        table('system test: a compressed day', facts),
        ...verdicts.map(([name, v]) =>
          table(`${v.violations.length ? '✗' : '✓'} ${name}`, Object.entries(v.counts)),
        ),
        table('reader answers', [...readerStatuses].sort()),
        table(
          'violations',
          violations.length ? violations.map((x, i) => [String(i + 1), x]) : [['none', '']],
        ),
      ].join('\n'),
    );
    if (violations.length) {
      const dir = mkdtempSync(join(tmpdir(), 'trips-system-test-'));
      for (const r of replicas) r.saveLogs(dir);
      writeFileSync(join(dir, 'changes.json'), JSON.stringify(changes, null, 1));
      writeFileSync(join(dir, 'events.json'), JSON.stringify(events, null, 1));
      console.log(`the services' logs, the changes and the events are kept in ${dir}`);
    }
    expect(violations).toEqual([]);
  },
  280_000,
);
