// `pnpm bench:sdk`: what the SDK costs over doing it by hand (issue 25, item 10), loopback only,
// about a minute, in two parts, each in rounds alternating ours and the bare baseline:
//   1. verifyWebhook per second against the bare recipe a receiver must run to get an event it can
//      act on: createHmac + timingSafeEqual over the same signed payloads, followed by the body's
//      JSON.parse (target ≥ 0.8×); and, printed beside it, against the recipe without the parse,
//      the issue's first baseline, which no function returning the event can reach (docs/sdk.md,
//      "What verifyWebhook costs"). All run in this process, one after the other.
//   2. events/s read through client.events.consume() against a bare fetch loop over
//      GET /api/v1/events, both reading the same events from the real API, which runs as its own
//      process with the recorder (target ≥ 0.9×).
// Results and how to read them: docs/benchmarks.md, "SDK".
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  signWebhookForTest,
  TripService,
  verifyWebhook,
  type CursorStore,
  type Event,
} from '../../packages/sdk/src/index.ts';
import { startStack } from '../sdk/stack.ts';
import { fmt, median, onCleanup, runBench, table } from './lib.ts';

const ROUNDS = 5;
const VERIFY_PAYLOADS = 1_000;
const VERIFY_WINDOW_MS = 2_000;
const EVENTS = 20_000;
/** Both readers read pages of the API's largest size, as a reader that wants speed would. */
const PAGE = 1_000;
const SECRET = 'whsec_bench_0123456789abcdef';

// ---- 1. verifyWebhook against the bare recipe ----

interface Payload {
  body: Buffer;
  headers: Record<string, string>;
  /** The header's parts, as the bare loop reads them. */
  header: string;
}

function payloads(): Payload[] {
  return Array.from({ length: VERIFY_PAYLOADS }, (_, i) => {
    const trip = `trp_${String(i).padStart(16, '0')}`;
    const event: Event = {
      object: 'event',
      id: `evt_${String(i).padStart(16, '0')}`,
      type: 'trip.status_changed',
      created_at: new Date().toISOString(),
      related_object: { type: 'trip', id: trip, url: `/api/v1/trips/${trip}` },
      data: { from: 'planning', to: 'confirmed' },
    };
    const { body, headers } = signWebhookForTest(event, SECRET);
    return { body: Buffer.from(body), headers, header: headers['service-signature']! };
  });
}

/** The recipe of docs/webhooks.md for other languages: split the header, HMAC, compare. */
function bareVerify(header: string, body: Buffer, secret: string): boolean {
  let t = '';
  let v1 = '';
  for (const part of header.split(',')) {
    if (part.startsWith('t=')) t = part.slice(2);
    else if (part.startsWith('v1=')) v1 = part.slice(3);
  }
  const expected = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
  const given = Buffer.from(v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Calls `verify` over the payloads round and round for a window; verifications per second. */
function rate(all: Payload[], verify: (p: Payload) => unknown, windowMs: number): number {
  let done = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < windowMs) {
    for (let i = 0; i < 256; i++) {
      if (!verify(all[done % all.length]!)) throw new Error('a payload failed verification');
      done++;
    }
    elapsed = performance.now() - started;
  }
  return (done / elapsed) * 1000;
}

/**
 * Ours, the recipe followed by the JSON.parse every receiver does next (the baseline: verifyWebhook
 * returns the parsed event), and the recipe alone, printed beside it.
 */
function verifyPart(): { ours: number[]; bare: number[]; parsed: number[] } {
  const all = payloads();
  const loops = {
    ours: (p: Payload) => verifyWebhook(p.body, p.headers, SECRET),
    bare: (p: Payload) => bareVerify(p.header, p.body, SECRET),
    parsed: (p: Payload) => bareVerify(p.header, p.body, SECRET) && JSON.parse(p.body.toString('utf8')),
  };
  for (const loop of Object.values(loops)) rate(all, loop, 500); // warm-up: every loop compiled first
  const result = { ours: [] as number[], bare: [] as number[], parsed: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order =
      round % 2 === 0 ? (['ours', 'bare', 'parsed'] as const) : (['parsed', 'bare', 'ours'] as const);
    for (const who of order) result[who].push(rate(all, loops[who], VERIFY_WINDOW_MS));
  }
  return result;
}

// ---- 2. consume() against a bare fetch loop over GET /events ----

async function readWithConsume(client: TripService): Promise<number> {
  let cursor: string | undefined;
  const store: CursorStore = { load: async () => undefined, save: async (c) => void (cursor = c) };
  const controller = new AbortController();
  let seen = 0;
  const started = performance.now();
  await client.events.consume({
    cursorStore: store,
    limit: PAGE,
    signal: controller.signal,
    handler: () => {
      if (++seen === EVENTS) controller.abort();
    },
  });
  const ms = performance.now() - started;
  if (seen !== EVENTS || !cursor) throw new Error(`consume() read ${seen} events, not ${EVENTS}`);
  return (seen / ms) * 1000;
}

async function readWithFetch(apiUrl: string, key: string): Promise<number> {
  let seen = 0;
  let after: string | undefined;
  const started = performance.now();
  for (;;) {
    const url = `${apiUrl}/api/v1/events?limit=${PAGE}${after ? `&after=${after}` : ''}`;
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    if (!res.ok) throw new Error(`GET /events answered ${res.status}`);
    const page = (await res.json()) as { data: Event[]; next_cursor: string; has_more: boolean };
    for (const _event of page.data) seen++;
    after = page.next_cursor;
    if (!page.has_more) break;
  }
  const ms = performance.now() - started;
  if (seen !== EVENTS) throw new Error(`the bare loop read ${seen} events, not ${EVENTS}`);
  return (seen / ms) * 1000;
}

async function consumePart(): Promise<{ ours: number[]; bare: number[] }> {
  // The rate limit is out of the way: this measures reading, not the limiter.
  const stack = await startStack({
    apiEnv: { RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '1000000' },
  });
  onCleanup(() => stack.stop());
  const agency = await stack.agency();
  for (let i = 0; i < EVENTS; i += 1_000) {
    const rows = Array.from({ length: 1_000 }, (_, j) => ({
      agency_id: agency.agencyId,
      title: `Trip ${i + j}`,
      num_days: 7,
    }));
    await stack.db
      .insertInto('trips')
      .values(rows as never)
      .execute();
  }
  const client = new TripService({ apiKey: agency.key, baseUrl: stack.apiUrl });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const recorded = (await client.events.list({ limit: 1000 }).toArray()).length;
    if (recorded >= EVENTS) break;
    if (Date.now() > deadline) throw new Error(`only ${recorded} of ${EVENTS} events recorded in 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  await readWithConsume(client); // warm-up of both paths and of the API's queries
  await readWithFetch(stack.apiUrl, agency.key);
  const result = { ours: [] as number[], bare: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['ours', 'bare'] as const) : (['bare', 'ours'] as const);
    for (const who of order)
      result[who].push(
        who === 'ours' ? await readWithConsume(client) : await readWithFetch(stack.apiUrl, agency.key),
      );
  }
  return result;
}

// ---- The run ----

const verdict = (ratio: number, target: number) =>
  `${fmt.ratio(ratio)} (target ≥ ${target}: ${ratio >= target ? 'met' : 'missed'})`;

await runBench(async () => {
  console.log(`bench:sdk, node ${process.version}, ${ROUNDS} rounds each, ours and bare alternating`);
  const verify = verifyPart();
  const consume = await consumePart();
  const rows = [
    ['verifyWebhook against the recipe + JSON.parse, verifications/s', verify.ours, verify.parsed, 0.8],
    ['verifyWebhook against the recipe alone (no target)', verify.ours, verify.bare, undefined],
    [`consume(), events/s (${EVENTS} events, pages of ${PAGE})`, consume.ours, consume.bare, 0.9],
  ] as const;
  console.log(
    table(
      ['measure', 'ours per round', 'bare per round', 'median ours / bare', 'ratio'],
      rows.map(([name, ours, bare, target]) => {
        const ratio = median(ours) / median(bare);
        return [
          name,
          ours.map(fmt.rps).join(' '),
          bare.map(fmt.rps).join(' '),
          `${fmt.rps(median(ours))} / ${fmt.rps(median(bare))}`,
          target === undefined ? fmt.ratio(ratio) : verdict(ratio, target),
        ];
      }),
    ),
  );
  console.log(
    `the recipe + JSON.parse runs at ${fmt.ratio(median(verify.parsed) / median(verify.bare))} of the recipe alone`,
  );
});
