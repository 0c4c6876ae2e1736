/**
 * Exponential backoff with jitter: many clients that failed together (an API restart) must not
 * retry together. The delay is drawn between half and all of the doubled step, capped.
 */
export function backoffMs(attempt: number, baseMs = 500, capMs = 8_000): number {
  const step = Math.min(capMs, baseMs * 2 ** attempt);
  return step / 2 + Math.random() * (step / 2);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
