import { randomBytes } from 'node:crypto';
import type { TripService } from '../client.ts';
import type { Event, EventType } from '../openapi-types.ts';
import { backoffMs, sleep } from '../retry.ts';
import { eventProblem, sizeProblem } from './event-check.ts';
import { standardWebhooksSecret } from '../webhooks/keys.ts';
import { accepts, forward, ForwardError } from './forward.ts';
import { eventLine, shown, skippedLine } from './output.ts';

export interface ListenOptions {
  forwardTo: string;
  types: EventType[] | undefined;
  after: string | undefined;
  /** What deliveries are signed with, and whether the developer chose it (else newSecret made it). */
  secret: { value: string; given: boolean };
  signal: AbortSignal;
  out: (text: string) => void;
  /** Told of every cursor the run reaches, so that whatever ends it can say where to resume. */
  onCursor: (cursor: string) => void;
}

/** A secret in the service's format (D7), made afresh for a run that was given none. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

/**
 * The backoff of a failed forward or read: from half a second, doubling, to at most 5 s. A
 * developer is waiting on it, and the receiver is theirs, on their machine.
 */
const RETRY = { baseMs: 500, capMs: 5_000 };
/** While nothing listens at --forward-to, how often to look whether something does. */
const PROBE_MS = 250;

/**
 * Waits before the next attempt of a forward. After a refused connection it looks every PROBE_MS
 * whether the receiver accepts connections, and ends the wait as soon as it does: a receiver
 * restarted gets the waiting event at once, not when the backoff is over.
 */
async function waitToRetry(error: ForwardError, attempt: number, target: URL, signal: AbortSignal) {
  const until = Date.now() + backoffMs(attempt - 1, RETRY.baseMs, RETRY.capMs);
  if (!error.refused) return sleep(until - Date.now(), signal);
  while (Date.now() < until) {
    await sleep(Math.min(PROBE_MS, until - Date.now()), signal);
    if (await accepts(target)) return;
  }
}

/**
 * Forwards one item of a page until the receiver takes it, in order: what comes behind it waits.
 * An item that is not an event of the document's schema, or too big to be one of the service's,
 * is not forwarded: one line says why, and the cursor moves past it.
 */
async function deliver(item: unknown, target: URL, options: ListenOptions): Promise<void> {
  const problem = eventProblem(item) ?? sizeProblem(item as Event);
  if (problem) return options.out(skippedLine(item, problem));
  const event = item as Event;
  for (let attempt = 1; ; attempt++) {
    try {
      const { status, ms } = await forward(target.href, event, options.secret.value, options.signal);
      return options.out(eventLine(event, `→ ${status}  ${ms} ms`));
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (!(error instanceof ForwardError)) throw error;
      options.out(eventLine(event, `✗ ${error.message}  ${error.ms} ms; retrying (attempt ${attempt})`));
      await waitToRetry(error, attempt, target, options.signal);
    }
  }
}

/**
 * `trips listen`: reads GET /events from now (or --after) and POSTs each event to the local
 * receiver as the dispatcher would, so its verification runs unchanged. A failed forward is
 * retried with backoff, in order. Resolves once the signal stops it; rejects when the API refuses
 * (a revoked key, say) or answers what is not a page of events.
 */
export async function listen(client: TripService, options: ListenOptions): Promise<void> {
  const target = new URL(options.forwardTo); // the caller checked it parses
  let cursor =
    options.after ??
    (await client.events.currentCursor({ types: options.types }, { signal: options.signal }));
  options.onCursor(cursor);
  options.out(
    `Ready. Forwarding ${options.types?.join(', ') ?? 'all'} events to ${target.href}\n` +
      `Webhook secret for your receiver: ${options.secret.value}\n` +
      `The same secret for Standard Webhooks libraries: ${standardWebhooksSecret(options.secret.value)}\n` +
      (options.secret.given ? '' : '(a new one each run; pass --secret to keep one)\n'),
  );
  await client.events.consume({
    types: options.types,
    signal: options.signal,
    pollIntervalMs: 500,
    retry: RETRY,
    cursorStore: {
      load: async () => cursor,
      save: async (next) => {
        cursor = next;
        options.onCursor(next);
      },
    },
    handler: (item) => deliver(item, target, options),
    onError: (error, { event, attempt }) => {
      const what = event ? `forwarding ${shown(event.id, 60)}` : 'reading events';
      const message = shown((error as Error)?.message ?? String(error), 500);
      options.out(`${what} failed (attempt ${attempt}): ${message}\n`);
    },
  });
}
