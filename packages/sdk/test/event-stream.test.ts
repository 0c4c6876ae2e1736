import { once } from 'node:events';
import { createServer, request } from 'node:http';
import {
  createEventStream,
  signWebhookForTest,
  TripService,
  type DedupeStore,
  type Event,
} from '../src/index.ts';

// The event stream calls the handler once per event id even when two arrivals of one event
// interleave with a dedupe store whose answers come back late, as a table's do from a pool of
// connections: the second arrival's "not seen" may be answered after the first arrival's handler
// ran and its id was added.

const secret = `whsec_${Buffer.alloc(32, 7).toString('base64url')}`;
const event: Event = {
  object: 'event',
  id: 'evt_streamRace000001',
  type: 'trip.created',
  created_at: '2026-11-28T10:15:30.123Z',
  related_object: { type: 'trip', id: 'trp_1', url: '/api/v1/trips/trp_1' },
  data: {},
};

/**
 * A store like a table read over several connections: the first `has` answers at once, the second
 * was asked before the first arrival's id was added but answers only after that add returned.
 */
function lateAnsweringStore(): DedupeStore {
  const ids = new Set<string>();
  let asked = 0;
  let added: () => void = () => {};
  const addDone = new Promise<void>((resolve) => (added = resolve));
  return {
    async has(id) {
      const seen = ids.has(id);
      if (++asked === 2) await addDone.then(() => new Promise((resolve) => setTimeout(resolve, 10)));
      return seen;
    },
    async add(id) {
      ids.add(id);
      added();
    },
  };
}

test('two arrivals of one event with a store that answers late: the handler runs once', async () => {
  const calls: string[] = [];
  const stream = createEventStream({
    client: new TripService({ apiKey: 'sk_test_unused', baseUrl: 'http://127.0.0.1:9' }),
    secrets: secret,
    cursorStore: { load: async () => undefined, save: async () => {} },
    dedupe: lateAnsweringStore(),
    handler: async (e) => {
      calls.push(e.id);
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
  });
  const server = createServer((req, res) => void stream.webhookHandler(req, res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const post = () => {
    const { body, headers } = signWebhookForTest(event, secret);
    return new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end(body);
    });
  };
  try {
    expect(await Promise.all([post(), post()])).toEqual([200, 200]);
    expect(calls).toEqual([event.id]);
  } finally {
    await stream.stop();
    server.close();
  }
});
