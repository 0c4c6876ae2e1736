// Wiring only: arguments in, exit code out. The program itself lives in program.ts.
import { run } from './program.ts';

// A reader that stops early (`| true`, a closed `| head`) closes the pipe: the output is no longer
// wanted, which is nothing to report, least of all with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
