import type { Kysely } from 'kysely';
import type { Database } from '@trips/db';
import type { Io } from './output.ts';

export type Env = Record<string, string | undefined>;

/** What a command may use. The pool opens on first use of db() and run() always closes it. */
export interface Context {
  io: Io;
  env: Env;
  db(): Kysely<Database>;
}

export const JSON_OPTION = ['--json', 'print the result as JSON on stdout'] as const;
