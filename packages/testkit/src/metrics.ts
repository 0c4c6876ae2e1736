// Reading a Prometheus text exposition (a service's /metrics) in tests, whatever order its labels
// come in: prom-client puts `le` first and the registry's `service` label before the metric's own.

/** Fetches a /metrics page. */
export async function scrapeMetrics(url: string): Promise<string> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return response.text();
}

/**
 * The sum of the samples named `name` whose labels include `labels` (all of them, each equal), or
 * undefined when there is none: `sample(text, 'x_count', { attempt: 'first' })` for one series of a
 * histogram, across whatever other labels it has.
 */
export function sample(
  exposition: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  let sum: number | undefined;
  for (const line of exposition.split('\n')) {
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = new Map(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value))
      sum = (sum ?? 0) + Number(match[3]);
  }
  return sum;
}
