import type { CursorStore } from './cursor-store.ts';
import { TripServiceError } from './errors.ts';
import type { Event, EventList, EventType } from './openapi-types.ts';
import type { EventsResource } from './resources.ts';
import { backoffMs, sleep } from './retry.ts';

export interface CursorExpired {
  /** The API's 410 `cursor_expired`. */
  error: TripServiceError;
  /**
   * Where the consumer goes on from once the callback returns: taken before the callback runs,
   * so every change made during the resync is read afterwards as an event.
   */
  resumeCursor: string;
}

export interface ConsumeOptions {
  /** Called once per event, in cursor order; a rejection is retried with backoff, never skipped. */
  handler: (event: Event, context: { signal: AbortSignal; attempt: number }) => unknown;
  cursorStore: CursorStore;
  types?: readonly EventType[];
  /** Stops the consumer; consume() then resolves. */
  signal?: AbortSignal;
  /** Page size, 1–1000. Default 100. */
  limit?: number;
  /** How long to wait once the consumer has caught up, before reading again. Default 1 s. */
  pollIntervalMs?: number;
  /**
   * The stored cursor is older than the API keeps events (410): events were lost to this reader.
   * Resync here (list objects with `updatedSince`). Without this callback consume() rejects.
   */
  onCursorExpired?: (info: CursorExpired) => unknown;
  /** Told of every failed handler call and failed read before it is retried. Default: stderr. */
  onError?: (error: unknown, context: { event?: Event; attempt: number }) => void;
  /** Backoff of retries: first step and cap in milliseconds. Defaults 500 and 30,000. */
  retry?: { baseMs?: number; capMs?: number };
}

/** An idle consumer saves its cursor this often, so its position never ages into a 410. */
const IDLE_SAVE_MS = 60_000;

const transient = (error: unknown) =>
  error instanceof TripServiceError && (error.status === 0 || error.status === 429 || error.status >= 500);

function defaultOnError(error: unknown, context: { event?: Event; attempt: number }): void {
  const what = context.event
    ? `handler failed on ${context.event.id} (${context.event.type})`
    : 'reading events failed';
  process.stderr.write(
    `trips consumer: ${what}, attempt ${context.attempt}: ${(error as Error)?.message ?? error}\n`,
  );
}

function checkOptions(options: ConsumeOptions): void {
  if (!options || typeof options.handler !== 'function')
    throw new TypeError('consume: handler must be a function (event) => …');
  const store = options.cursorStore;
  if (!store || typeof store.load !== 'function' || typeof store.save !== 'function')
    throw new TypeError('consume: cursorStore needs load() and save(cursor), e.g. fileCursorStore(path).');
}

export async function consume(events: EventsResource, options: ConsumeOptions): Promise<void> {
  checkOptions(options);
  const signal = options.signal ?? new AbortController().signal;
  const onError = options.onError ?? defaultOnError;
  const pause = (attempt: number) =>
    sleep(backoffMs(attempt, options.retry?.baseMs ?? 500, options.retry?.capMs ?? 30_000), signal);
  const stopped = (error: unknown) =>
    signal.aborted && (error === signal.reason || !(error instanceof TripServiceError));
  let cursor = (await options.cursorStore.load()) ?? undefined;
  let savedAt = Date.now();
  let readFailures = 0;

  const read = async (): Promise<EventList | undefined> => {
    try {
      const page = await events.list(
        { after: cursor, types: options.types, limit: options.limit },
        { signal },
      );
      readFailures = 0;
      return page;
    } catch (error) {
      if (stopped(error)) throw error;
      if (error instanceof TripServiceError && error.code === 'cursor_expired') {
        if (!options.onCursorExpired) throw error;
        const resumeCursor = await events.currentCursor({ types: options.types }, { signal });
        await options.onCursorExpired({ error, resumeCursor });
        cursor = resumeCursor;
        await options.cursorStore.save(cursor);
        return undefined;
      }
      if (!transient(error)) throw error;
      onError(error, { attempt: ++readFailures });
      await pause(readFailures - 1);
      return undefined;
    }
  };

  const handle = async (event: Event) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await options.handler(event, { signal, attempt });
        return;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        onError(error, { event, attempt });
        await pause(attempt - 1);
      }
    }
  };

  try {
    while (!signal.aborted) {
      const page = await read();
      if (!page) continue;
      for (const event of page.data) await handle(event);
      if (page.data.length > 0 || Date.now() - savedAt > IDLE_SAVE_MS) {
        await options.cursorStore.save(page.next_cursor);
        savedAt = Date.now();
      }
      cursor = page.next_cursor;
      if (!page.has_more) await sleep(options.pollIntervalMs ?? 1_000, signal);
    }
  } catch (error) {
    if (!stopped(error)) throw error;
  }
}
