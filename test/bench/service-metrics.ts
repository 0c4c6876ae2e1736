// The services' own counters, read from their /metrics before and after a window: where a
// benchmark's slow events waited, in the services' words (bench:capacity's steps).
type Series = Map<string, number>;

/** Every sample of the metrics named, keyed by the sample's name and labels as printed. */
export async function readSeries(port: number, names: readonly string[]): Promise<Series> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const series: Series = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !names.some((name) => line.startsWith(name))) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** The samples of several processes added up (replicas of one service). */
export function sumSeries(all: readonly Series[]): Series {
  const sum: Series = new Map();
  for (const series of all) for (const [key, value] of series) sum.set(key, (sum.get(key) ?? 0) + value);
  return sum;
}

export function seriesDelta(before: Series, after: Series): Series {
  return new Map([...after].map(([key, value]) => [key, value - (before.get(key) ?? 0)]));
}

/** The sum of the samples whose key starts with `prefix` and holds every `labels` text. */
export function sampleSum(series: Series, prefix: string, ...labels: string[]): number {
  let sum = 0;
  for (const [key, value] of series)
    if (key.startsWith(prefix) && labels.every((l) => key.includes(l))) sum += value;
  return sum;
}
