import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Where a consumer keeps its place in GET /events. Two functions, so a store in the agency's own
 * database is a few lines (docs/sdk.md shows one in Postgres).
 */
export interface CursorStore {
  /** The cursor saved last, or undefined/null when there is none yet. */
  load(): Promise<string | undefined | null>;
  save(cursor: string): Promise<void>;
}

/**
 * A cursor in a file. Each save writes a new file and renames it over the old, so a crash mid-write
 * leaves the previous cursor, never half of one.
 */
export function fileCursorStore(path: string): CursorStore {
  if (typeof path !== 'string' || path === '')
    throw new TypeError('fileCursorStore: path must be a file path.');
  let saves = 0;
  return {
    async load() {
      try {
        const text = (await readFile(path, 'utf8')).trim();
        return text === '' ? undefined : text;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async save(cursor) {
      await mkdir(dirname(path), { recursive: true });
      const temporary = `${path}.${process.pid}.${++saves}.tmp`;
      await writeFile(temporary, `${cursor}\n`);
      await rename(temporary, path);
    },
  };
}
