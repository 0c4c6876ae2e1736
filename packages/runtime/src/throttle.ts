/**
 * A gate that opens at most once per `intervalMs`: for a warning about a lasting condition (a store
 * unreachable, no queue bound) that must show in the log without repeating on every request or
 * round. The first call opens it.
 */
export function atMostEvery(intervalMs: number, now: () => number = Date.now): () => boolean {
  let last = -Infinity;
  return () => {
    const at = now();
    if (at - last < intervalMs) return false;
    last = at;
    return true;
  };
}
