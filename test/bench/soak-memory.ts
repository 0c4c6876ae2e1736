// Each service's memory for `pnpm bench:soak` (issue 43): RSS alone cannot tell a leak from memory
// V8 or the allocator keeps, so every reading also splits it. From the service's Prometheus
// metrics (prom-client's default ones, as a cluster scrapes them): the V8 heap in use, the heap V8
// has reserved (heapTotal) and each of its spaces' size, and `external` (Buffers, ArrayBuffers and
// other memory outside the heap that V8 is told of). From /proc: RSS, its anonymous and file-backed
// parts. RSS − heapTotal is then what the process holds outside V8's heap: code and libraries
// (RssFile), and native memory (malloc arenas, TLS, zlib, socket buffers, `external`).
import { readFileSync } from 'node:fs';

export interface MemoryReading {
  rss: number;
  rssAnon: number;
  rssFile: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** V8's spaces' sizes (new, old, code, large_object, …), bytes. */
  spaces: Record<string, number>;
}

const metric = (text: string, name: string, label = '') =>
  Number(new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** One service's reading; the metrics' figures are NaN when they cannot be read. */
export async function readMemory(pid: number, metricsPort: number): Promise<MemoryReading> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) * 1024;
  const rss = kb('VmRSS');
  if (!Number.isFinite(rss)) throw new Error(`no VmRSS for pid ${pid}`);
  let text = '';
  try {
    text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  } catch {
    // NaN below
  }
  const spaces: Record<string, number> = {};
  for (const [, space, bytes] of text.matchAll(
    /^nodejs_heap_space_size_total_bytes\{[^}]*space="(\w+)"[^}]*\} (\S+)$/gm,
  ))
    if (Number(bytes) > 0) spaces[space!] = Number(bytes);
  return {
    rss,
    rssAnon: kb('RssAnon'),
    rssFile: kb('RssFile') + kb('RssShmem'),
    heapUsed: metric(text, 'nodejs_heap_size_used_bytes'),
    heapTotal: metric(text, 'nodejs_heap_size_total_bytes'),
    external: metric(text, 'nodejs_external_memory_bytes'),
    spaces,
  };
}

export interface MinuteMemory {
  /** The heap in use's lowest reading: what stays live after collection, what a leak grows. */
  heapFloor: number;
  /** RSS's highest reading: what a pod's memory limit must hold. */
  rssPeak: number;
  /** The whole reading at that RSS peak, to say what the peak is made of. */
  atPeak: MemoryReading;
}

/**
 * Every service read every `everyMs`; `take()` answers, per service, since the last take, the
 * heap's floor and RSS's peak with its breakdown. Why not one reading a minute: the heap in use
 * rises and falls with each collection, so one reading lands anywhere on that sawtooth and a line
 * fitted through an hour of them moves by more than the target by chance.
 */
export function memoryWatch<S extends string>(
  read: () => Promise<Record<S, MemoryReading>>,
  everyMs: number,
) {
  let minute: Partial<Record<S, MinuteMemory>> = {};
  let running = true;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = (async () => {
    while (running) {
      for (const [name, r] of Object.entries(await read()) as [S, MemoryReading][]) {
        const m = minute[name];
        minute[name] = {
          heapFloor: Math.min(m?.heapFloor ?? Infinity, r.heapUsed),
          rssPeak: Math.max(m?.rssPeak ?? 0, r.rss),
          atPeak: m && m.rssPeak >= r.rss ? m.atPeak : r,
        };
      }
      await sleep(everyMs);
    }
  })();
  return {
    take(): Record<S, MinuteMemory> {
      const taken = minute as Record<S, MinuteMemory>;
      minute = {};
      return taken;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

const MB = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

/** One service's breakdown at its peak, in MB: what the minute lines print. */
export function breakdown(r: MemoryReading): string {
  const spaces = Object.entries(r.spaces)
    .filter(([, b]) => b >= 2 ** 19)
    .map(([s, b]) => `${s.replace(/_space$/, '')} ${MB(b)}`)
    .join(' ');
  return (
    `RSS ${MB(r.rss)} (anon ${MB(r.rssAnon)}, file ${MB(r.rssFile)}) = heapTotal ${MB(r.heapTotal)} ` +
    `[${spaces}] + outside ${MB(r.rss - r.heapTotal)} (external ${MB(r.external)})`
  );
}
