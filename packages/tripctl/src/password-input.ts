import type { Io } from './output.ts';

/**
 * A password from stdin: on a terminal, a prompt on stderr with echo off, up to Enter; otherwise
 * the first line of what is piped in (`printf '%s\n' "$PW" | tripctl user set-password …`).
 * Never from argv, where it would reach the shell history and `ps`.
 */
export async function readPassword(io: Io, prompt: string): Promise<string> {
  const stdin = io.stdin;
  if (!stdin) return '';
  if (stdin.isTTY && stdin.setRawMode) {
    io.stderr.write(prompt);
    stdin.setRawMode(true);
    stdin.resume();
    try {
      return await new Promise<string>((resolve, reject) => {
        let text = '';
        const onData = (chunk: Buffer | string) => {
          for (const ch of chunk.toString()) {
            if (ch === '\r' || ch === '\n') return done(() => resolve(text));
            if (ch === '\u0003') return done(() => reject(new Error('cancelled')));
            if (ch === '\u007f') text = text.slice(0, -1);
            else text += ch;
          }
        };
        const done = (finish: () => void) => {
          stdin.off('data', onData);
          finish();
        };
        stdin.on('data', onData);
      });
    } finally {
      stdin.setRawMode(false);
      stdin.pause();
      io.stderr.write('\n');
    }
  }
  let text = '';
  for await (const chunk of stdin) {
    text += chunk.toString();
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0]!;
}
