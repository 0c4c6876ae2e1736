/**
 * `promise`, or a rejection with `timeoutError()` once `ms` have passed, whichever comes first.
 * The work itself is not cancelled (a query or a broker call has no handle for that); the caller
 * only stops waiting for it.
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
