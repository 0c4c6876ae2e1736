const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

/** Parses the durations of decisions.md D9 (`500ms`, `10s`, `1m`, `2h`, `3d`) into milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`'${text}' is not a duration (use e.g. 500ms, 10s, 1m, 2h, 3d)`);
  return Number(match[1]) * UNIT_MS[match[2] as Unit];
}

/** The shortest exact D9 spelling of a duration, used to name delay queues by their delay. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

const UNIT_WORDS = [
  ['d', 'day'],
  ['h', 'hour'],
  ['m', 'minute'],
] as const;

/** A duration for people, in its largest whole unit: '30 days', '36 hours', '90 minutes'. */
export function describeDuration(ms: number): string {
  const [unit, word] = UNIT_WORDS.find(([u]) => ms % UNIT_MS[u] === 0) ?? UNIT_WORDS[2];
  const n = Math.max(1, Math.round(ms / UNIT_MS[unit]));
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
