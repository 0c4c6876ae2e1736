/**
 * Which event ids an event stream has handled already. Two functions, so a store shared by several
 * receiver processes (a table with the id as its key, a Redis set) is a few lines. Ids only come
 * again for a while (a webhook's retries, a cursor that lags behind), so a store may forget the
 * oldest ids: it only needs to remember more ids than arrive during that while.
 */
export interface DedupeStore {
  /** True when the handler already succeeded for this event id. */
  has(id: string): boolean | Promise<boolean>;
  /** Called once the handler succeeded for this event id. */
  add(id: string): void | Promise<void>;
}

/**
 * The default store: the `max` ids used last, in this process's memory (a Map keeps insertion
 * order, so its first key is the one used longest ago). It forgets everything on a restart: give
 * the stream a store in your database when a restart must not call the handler again for events
 * it handled just before.
 */
export function memoryDedupe(options: { max?: number } = {}): DedupeStore {
  const max = options.max ?? 10_000;
  if (!Number.isInteger(max) || max < 1)
    throw new TypeError(`memoryDedupe: max must be a whole number of ids, 1 or more; got ${String(max)}.`);
  const ids = new Map<string, true>();
  const touch = (id: string) => {
    ids.delete(id);
    ids.set(id, true);
  };
  return {
    has(id) {
      if (!ids.has(id)) return false;
      touch(id);
      return true;
    },
    add(id) {
      touch(id);
      if (ids.size > max) ids.delete(ids.keys().next().value!);
    },
  };
}
