import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import type { Settings } from '@trips/settings';
import type { Io } from './output.ts';

export type Env = Record<string, string | undefined>;

/** What a command may use. The pool opens on first use of db() and run() always closes it. */
export interface Context {
  io: Io;
  env: Env;
  db(): Kysely<Database>;
  /** The owners' settings module, acting as the platform team; reads AMQP_* and EVENT_RETENTION on first use. */
  settings(): Settings;
}

export const JSON_OPTION = [
  '--json',
  "print the result as JSON on stdout (run as `pnpm -s tripctl` to keep pnpm's banner off it)",
] as const;
