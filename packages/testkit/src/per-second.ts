/**
 * The most of these times (ms) that any window of one second holds: a rate limit's test and
 * bench:pace count a webhook's deliveries with it.
 */
export function mostInOneSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + 1_000) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
