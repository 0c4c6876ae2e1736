import { createDice, type Dice } from './dice.ts';
import { createModel, type Model } from './model.ts';

// What every kind of change shares: the agency it works for, the dice, the model of what it
// wrote, and a counter that keeps titles, emails and the like apart.

export const DAY_MS = 86_400_000;

export interface ActivityContext extends Dice, Model {
  readonly agencyId: string;
  /** A number not handed out before in this run. */
  next(): number;
  /** The day `daysAhead` days from today, as YYYY-MM-DD. */
  date(daysAhead: number): string;
}

export function createContext(agencyId: string, seed: number): ActivityContext {
  let counter = 0;
  return {
    agencyId,
    ...createDice(seed),
    ...createModel(),
    next: () => ++counter,
    date: (daysAhead) => new Date(Date.now() + daysAhead * DAY_MS).toISOString().slice(0, 10),
  };
}
