// Wiring only: arguments in, exit code out. The program itself lives in program.ts.
import { run } from './program.ts';

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
