import { randomBytes } from 'node:crypto';
import type { TripService } from '../client.ts';
import type { EventType } from '../openapi-types.ts';
import { forward, ForwardError } from './forward.ts';
import { eventLine } from './output.ts';

export interface ListenOptions {
  forwardTo: string;
  types: EventType[] | undefined;
  after: string | undefined;
  secret: string | undefined;
  signal: AbortSignal;
  out: (text: string) => void;
}

/** A secret in the service's format (D7), made afresh for a run that was given none. */
const newSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

/**
 * `trips listen`: reads GET /events from now (or --after) and POSTs each event to the local
 * receiver as the dispatcher would, so its verification runs unchanged. A failed forward is
 * retried with backoff, in order; nothing is skipped. Answers the cursor to resume from.
 */
export async function listen(client: TripService, options: ListenOptions): Promise<string> {
  const target = new URL(options.forwardTo); // the caller checked it parses
  const secret = options.secret ?? newSecret();
  let cursor =
    options.after ??
    (await client.events.currentCursor({ types: options.types }, { signal: options.signal }));
  options.out(
    `Ready. Forwarding ${options.types?.join(', ') ?? 'all'} events to ${target.href}\n` +
      `Webhook secret for your receiver: ${secret}\n` +
      (options.secret ? '' : '(a new one each run; pass --secret to keep one)\n'),
  );
  await client.events.consume({
    types: options.types,
    signal: options.signal,
    pollIntervalMs: 500,
    retry: { baseMs: 1_000, capMs: 30_000 },
    cursorStore: {
      load: async () => cursor,
      save: async (next) => {
        cursor = next;
      },
    },
    handler: async (event) => {
      const { status, ms } = await forward(target.href, event, secret);
      options.out(eventLine(event, `→ ${status}  ${ms} ms`));
    },
    onError: (error, { event, attempt }) => {
      if (!event)
        return options.out(`reading events failed (attempt ${attempt}): ${(error as Error).message}\n`);
      const ms = error instanceof ForwardError ? `  ${error.ms} ms` : '';
      options.out(eventLine(event, `✗ ${(error as Error).message}${ms}; retrying (attempt ${attempt})`));
    },
  });
  return cursor;
}
