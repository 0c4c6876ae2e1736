import type { TripService } from '../client.ts';
import type { Event, EventType } from '../openapi-types.ts';
import { eventProblem, sizeProblem } from './event-check.ts';
import { eventLine, shown, skippedLine } from './output.ts';

interface TailOptions {
  types: EventType[] | undefined;
  after: string | undefined;
  json: boolean;
  signal: AbortSignal;
  /** Told of every cursor the run reaches, so that whatever ends it can say where to resume. */
  onCursor: (cursor: string) => void;
}

/**
 * `trips events tail`: prints each new event as it is recorded, from now or --after. What is not
 * an event of the schema is not printed: a line on stderr says why (stdout stays JSON with --json).
 */
export async function tail(
  client: TripService,
  options: TailOptions,
  out: (text: string) => void,
  warn: (text: string) => void,
): Promise<void> {
  let cursor =
    options.after ??
    (await client.events.currentCursor({ types: options.types }, { signal: options.signal }));
  options.onCursor(cursor);
  await client.events.consume({
    types: options.types,
    signal: options.signal,
    pollIntervalMs: 500,
    cursorStore: {
      load: async () => cursor,
      save: async (next) => {
        cursor = next;
        options.onCursor(next);
      },
    },
    handler: (item) => {
      const problem = eventProblem(item) ?? sizeProblem(item as Event);
      if (problem) return warn(skippedLine(item, problem));
      out(options.json ? `${JSON.stringify(item)}\n` : eventLine(item, shown(item.related_object.id)));
    },
  });
}

const RESOURCES = { trips: 'trips', payments: 'payments', contacts: 'contacts' } as const;

/** `trips <trips|payments|contacts> get <id>`: the object as JSON. */
export async function get(client: TripService, resource: string, id: string, out: (text: string) => void) {
  const name = RESOURCES[resource as keyof typeof RESOURCES];
  const object = await client[name].retrieve(id);
  out(`${JSON.stringify(object, null, 2)}\n`);
}
