// The activity's only source of chance. Seeded runs repeat only while every choice draws from it
// in the same order, so a refactoring must keep the calls (and their order) as they are.

export interface Dice {
  /** The next number in [0, 1). */
  random(): number;
  /** True with probability p. */
  chance(p: number): boolean;
  /** A whole number from min to max, both included. */
  int(min: number, max: number): number;
  /** One of the items, or undefined when there are none. */
  choose<T>(items: readonly T[]): T | undefined;
}

/** A small seeded generator (mulberry32): the same seed, the same day. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function createDice(seed: number): Dice {
  const random = generator(seed);
  return {
    random,
    chance: (p) => random() < p,
    int: (min, max) => min + Math.floor(random() * (max - min + 1)),
    choose: <T>(items: readonly T[]): T | undefined =>
      items.length ? items[Math.floor(random() * items.length)] : undefined,
  };
}
