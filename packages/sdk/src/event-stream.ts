import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TripService } from './client.ts';
import type { ConsumeOptions } from './consumer.ts';
import type { CursorStore } from './cursor-store.ts';
import { memoryDedupe, type DedupeStore } from './dedupe.ts';
import type { Event, EventType } from './openapi-types.ts';
import { createWebhookHandler } from './webhooks/handler.ts';
import type { VerifyOptions } from './webhooks/verify.ts';

/** How an event reached the handler: a webhook delivery, or the cursor read behind them. */
export type EventSource = 'webhook' | 'cursor';

export interface EventStreamOptions extends VerifyOptions {
  client: TripService;
  /** The webhook's secret (whsec_…), or during a rotation both. */
  secrets: string | readonly string[];
  /**
   * Called once per event id, whichever way it came first. A rejection is retried: a webhook
   * delivery is answered 500 (the service sends it again), the cursor retries with backoff.
   */
  handler: (event: Event, context: { source: EventSource }) => unknown;
  /** Where the cursor behind the webhooks keeps its place; it survives restarts in a file or a table. */
  cursorStore: CursorStore;
  /** The event ids handled already. Default: memoryDedupe(), the last 10,000 ids in memory. */
  dedupe?: DedupeStore;
  /** Only events of these types, from the cursor and from webhooks alike. */
  types?: readonly EventType[];
  /** How often the cursor reads once it has caught up. Default 5 s: webhooks bring events sooner. */
  pollIntervalMs?: number;
  onCursorExpired?: ConsumeOptions['onCursorExpired'];
  onError?: ConsumeOptions['onError'];
  retry?: ConsumeOptions['retry'];
}

export interface EventStream {
  /** For node:http (`createServer(handler)`) and Express (`app.post('/webhooks', handler)`). */
  webhookHandler: (
    req: IncomingMessage,
    res: ServerResponse,
    next?: (error?: unknown) => void,
  ) => Promise<void>;
  /**
   * Starts reading the cursor behind the webhooks. Resolves once stop() was called; rejects as
   * consume() does (a refused key, a 410 without onCursorExpired).
   */
  start(): Promise<void>;
  /**
   * Stops the cursor and waits for handler calls under way; no call starts after it. Webhook
   * deliveries are then answered 503 (or 500 if one was already being read), so the service
   * sends them again.
   */
  stop(): Promise<void>;
}

function checkOptions(options: EventStreamOptions): void {
  if (!options || typeof options.client?.events?.consume !== 'function')
    throw new TypeError(
      'createEventStream: client must be a TripService (new TripService({ apiKey, baseUrl })).',
    );
  if (typeof options.handler !== 'function')
    throw new TypeError('createEventStream: handler must be a function (event, { source }) => …');
  const store = options.cursorStore;
  if (!store || typeof store.load !== 'function' || typeof store.save !== 'function')
    throw new TypeError(
      'createEventStream: cursorStore needs load() and save(cursor), e.g. fileCursorStore(path): the cursor is how a receiver that was down catches up.',
    );
  const dedupe = options.dedupe;
  if (dedupe !== undefined && (typeof dedupe?.has !== 'function' || typeof dedupe.add !== 'function'))
    throw new TypeError('createEventStream: dedupe needs has(id) and add(id), e.g. memoryDedupe({ max }).');
}

/**
 * Webhooks and the cursor in one handler: deliveries come as fast as the service sends them, and
 * the cursor read behind them brings whatever a webhook missed (the receiver was down, the webhook
 * switched off, a delivery gave up), so nothing is lost and nothing is handled twice.
 */
export function createEventStream(options: EventStreamOptions): EventStream {
  checkOptions(options);
  const dedupe = options.dedupe ?? memoryDedupe();
  const types = options.types?.length ? new Set<string>(options.types) : undefined;
  // The same event can come both ways at once. Each id's check, handler call and add run as one
  // call that a second arrival waits for before it checks again: a store's "not seen" answered
  // after the first arrival's add (a table read over another connection) cannot start a second call.
  const running = new Map<string, Promise<void>>();

  let stopped = false;

  async function checkAndHandle(event: Event, source: EventSource): Promise<void> {
    if (await dedupe.has(event.id)) return;
    // Checked after the await, right before the call: once stop() began, no call starts.
    if (stopped) throw new Error('the event stream is stopping');
    await options.handler(event, { source });
    await dedupe.add(event.id);
  }

  async function handleOnce(event: Event, source: EventSource): Promise<void> {
    for (;;) {
      const earlier = running.get(event.id);
      if (earlier) {
        await earlier.catch(() => undefined); // it failed: this caller tries the handler itself
        continue;
      }
      if (stopped) throw new Error('the event stream is stopping');
      const call = checkAndHandle(event, source);
      running.set(event.id, call);
      try {
        return await call;
      } finally {
        if (running.get(event.id) === call) running.delete(event.id);
      }
    }
  }

  const verified = createWebhookHandler({
    secrets: options.secrets,
    toleranceSeconds: options.toleranceSeconds,
    now: options.now,
    onEvent: (event) => (types && !types.has(event.type) ? undefined : handleOnce(event, 'webhook')),
  });
  let controller: AbortController | undefined;
  let reading: Promise<void> | undefined;

  return {
    webhookHandler: (req, res, next) => {
      if (!stopped) return verified(req, res, next);
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
      res.end(JSON.stringify({ error: { message: 'the receiver is stopping; send it again later' } }));
      return Promise.resolve();
    },
    start() {
      if (reading) return reading;
      stopped = false;
      controller = new AbortController();
      reading = options.client.events
        .consume({
          cursorStore: options.cursorStore,
          types: options.types,
          signal: controller.signal,
          pollIntervalMs: options.pollIntervalMs ?? 5_000,
          handler: (event) => handleOnce(event, 'cursor'),
          onCursorExpired: options.onCursorExpired,
          onError: options.onError,
          retry: options.retry,
        })
        .finally(() => (reading = undefined));
      return reading;
    },
    async stop() {
      stopped = true;
      controller?.abort();
      await reading?.catch(() => undefined);
      // Calls under way finish first, so nothing is handled once stop() resolved.
      await Promise.allSettled(running.values());
    },
  };
}
