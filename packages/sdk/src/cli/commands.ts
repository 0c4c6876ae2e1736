import type { TripService } from '../client.ts';
import type { EventType } from '../openapi-types.ts';
import { eventLine } from './output.ts';

/** `trips events tail`: prints each new event as it is recorded, from now or --after. */
export async function tail(
  client: TripService,
  options: { types: EventType[] | undefined; after: string | undefined; json: boolean; signal: AbortSignal },
  out: (text: string) => void,
): Promise<string> {
  let cursor =
    options.after ??
    (await client.events.currentCursor({ types: options.types }, { signal: options.signal }));
  await client.events.consume({
    types: options.types,
    signal: options.signal,
    pollIntervalMs: 500,
    cursorStore: {
      load: async () => cursor,
      save: async (next) => {
        cursor = next;
      },
    },
    handler: (event) =>
      out(options.json ? `${JSON.stringify(event)}\n` : eventLine(event, event.related_object.id)),
  });
  return cursor;
}

const RESOURCES = { trips: 'trips', payments: 'payments', contacts: 'contacts' } as const;

/** `trips <trips|payments|contacts> get <id>`: the object as JSON. */
export async function get(client: TripService, resource: string, id: string, out: (text: string) => void) {
  const name = RESOURCES[resource as keyof typeof RESOURCES];
  const object = await client[name].retrieve(id);
  out(`${JSON.stringify(object, null, 2)}\n`);
}
