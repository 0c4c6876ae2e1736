/** Where a command writes; process.stdout/stderr in main.ts, string buffers in tests. */
export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  /** Where `user set-password` reads the password; a TTY gets a prompt without echo. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
}

/**
 * Every command prints its result through here: with --json one JSON document on stdout (Dates
 * become ISO 8601 UTC), otherwise the human lines. Both come from the same data, so they agree.
 */
export function printResult(io: Io, json: boolean | undefined, data: object, human: string[]): void {
  if (json) io.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
  else io.stdout.write(`${human.join('\n')}\n`);
}

export function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}
